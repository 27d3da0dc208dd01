"""A participant withdraws during their second call, in a real browser, on SQLite and on
PostgreSQL: afterwards neither their pseudonym nor their Prolific ID occurs anywhere (the database's
bytes: SQLite's file, log and shared memory, free pages and old log frames included, or a full
`pg_dump`; every file under the data root, its names and the members of compressed files too; a
fresh dataset export), and the other participant's rows and files are byte-identical to before.

The other participant (an aiortc peer, the page's part played in Python) has a call of their own
first, and their second call runs while the first withdraws: it goes on (its audio recorded and
its lease renewed after the erasure) and is stored complete when they hang up. The one who
withdraws consents in Chromium with an optional consent ticked, has a first call, starts a second
and withdraws while it is connected: the page asks first, then shows the study's withdrawn code
and its return link.
"""

from __future__ import annotations

import asyncio
import gzip
import io
import re
import tarfile
import threading
import time
import zipfile
from pathlib import Path

import httpx
import numpy as np
import pytest
import soundfile
import sqlalchemy as sa
from aiortc import RTCConfiguration, RTCPeerConnection, RTCSessionDescription
from aiortc.mediastreams import MediaStreamError
from playwright.sync_api import expect, sync_playwright
from sqlmodel import select

from app import build_app
from speech.audio import resample
from storage.audit_trail import command_line_actor
from storage.db import session_scope
from storage.models import ConversationSession, ErasureRecord, Participant
from studies.config import apply_config, parse_config
from studies.sessions import call_relpath
from tests.browser import serve
from tests.command_line import run_cli_process
from tests.databases import database_bytes
from tests.rendered_speech import Utterance, render_speech
from tests.studies.aiortc_participant import WavTrack, participant_call
from tests.studies.test_browser_call import _context, _pass_check, _wait_for_recorded_audio
from tests.studies.test_browser_call import fake_mic  # noqa: F401  (pytest fixture)
from tests.waiting import wait_until

# By itself after the others (`machine_to_itself`): its browser, the cascade's calls and the exports
# on two databases starved the calls of the file run beside it (a poor-network call measured 129 late
# blocks, its thread waiting for a CPU 63 % of the time).
pytestmark = [pytest.mark.alone, pytest.mark.machine_to_itself]
LEAVING, STAYING = "PRLFC-WITHDRAW-5f0c1e", "PRLFC-OTHER-9a7d3b"
CODE, RETURN_URL = "WDRAWN7", "https://app.prolific.com/submissions/complete?cc={code}"
# tables that change whoever withdraws: the analysis queue and the erasure's own record
BOOKKEEPING = ("alembic_version", "analysis_request", "erasure_record")


def _rows(engine) -> dict[str, list[dict]]:
    """Every row of every table but the bookkeeping ones, as {column: value}."""
    with engine.connect() as connection:
        tables = [t for t in sa.inspect(connection).get_table_names() if t not in BOOKKEEPING]
        return {t: sorted((dict(r) for r in connection.exec_driver_sql(f'SELECT * FROM "{t}"').mappings()), key=repr)
                for t in tables}


def _others(rows: dict[str, list[dict]], sessions: set[int], participant: int | None = None,
            external_id: str | None = None) -> dict:
    """`rows` less those of `sessions`, and of the `participant` with their Prolific ID's checks."""

    def theirs(table: str, row: dict) -> bool:
        return (table == "conversation_session" and row["id"] in sessions
                or table == "recording" and row["session_id"] in sessions
                or table == "participant" and row["id"] == participant
                or table == "questionnaire_response" and row["participant_id"] == participant
                or external_id is not None and table == "connection_check" and row["external_id"] == external_id)

    return {t: [r for r in rs if not theirs(t, r)] for t, rs in rows.items()}


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _outside(files: dict[str, bytes], sessions: set[int]) -> dict[str, bytes]:
    """The files but those of `sessions` and the cache (copies made again when asked for)."""
    return {name: data for name, data in files.items()
            if not any(name.startswith(f"sessions/{i}/") for i in sessions) and not name.startswith(".cache/")}


def _readable(name: str, data: bytes) -> list[bytes]:
    """The file's name and bytes and, for a compressed file (.gz, .zip, .npz, .tar), its members' too."""
    found = [name.encode(), data]
    try:
        if name.endswith(".gz"):
            found.append(gzip.decompress(data))
        elif zipfile.is_zipfile(io.BytesIO(data)):
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                found += [m.encode() for m in archive.namelist()] + [archive.read(m) for m in archive.namelist()]
        elif name.endswith((".tar", ".tgz", ".tar.gz")):
            with tarfile.open(fileobj=io.BytesIO(data)) as archive:
                found += [archive.extractfile(m).read() for m in archive.getmembers() if m.isfile()]
    except (OSError, zipfile.BadZipFile, tarfile.TarError):
        pass
    return found


def _holding(files: dict[str, bytes], needles: list[bytes]) -> list[str]:
    return [name for name, data in files.items() for blob in _readable(name, data) if any(n in blob for n in needles)]


def _to_call(page) -> None:
    """From the topic step to a connected call."""
    page.get_by_label("preparing for a hike").check()
    page.click("#topic-next")
    if page.locator("#start").is_disabled():
        page.click("#check-mic")
    expect(page.locator("#start")).to_be_enabled(timeout=15_000)
    page.click("#start")
    expect(page.locator("#call-state")).to_have_text("Connected: talk now.", timeout=60_000)


def _recorded_s(data_root: Path, session_id: int) -> float:
    """Seconds in the call's file so far (the recorder keeps it a valid WAV as the call goes)."""
    try:
        return soundfile.info(str(data_root / call_relpath(session_id))).duration
    except (OSError, RuntimeError):  # not written yet
        return 0.0


def _heartbeat_at(engine, session_id: int):
    with session_scope(engine) as session:
        return session.get(ConversationSession, session_id).heartbeat_at


class RunningCall:
    """A participant's call through the app's WebRTC path (an aiortc peer in a thread of its own, as
    tests.studies.aiortc_participant does) that goes on until `hang_up()`."""

    def __init__(self, base_url: str, participant: dict, system: str, mic_16k: np.ndarray):
        self.answer: dict = {}
        self.said: list[str] = []
        self._stop = threading.Event()
        self._failure: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(base_url, participant, system, mic_16k), daemon=True)
        self._thread.start()

    def _run(self, *args) -> None:
        try:
            asyncio.run(self._call(*args))
        except BaseException as e:  # noqa: BLE001  (raised again by hang_up, in the test's thread)
            self._failure = e

    async def _call(self, base_url, participant, system, mic_16k) -> None:
        pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))
        pc.addTrack(WavTrack(resample(mic_16k, 16000, 48000)))
        channel = pc.createDataChannel("control")
        channel.on("message", lambda message: message != "alive" and self.said.append(message))

        @pc.on("track")
        def on_track(track):
            async def listen():  # what the participant hears, read as a page plays it
                while True:
                    try:
                        await track.recv()
                    except MediaStreamError:
                        return

            asyncio.ensure_future(listen())

        await pc.setLocalDescription(await pc.createOffer())
        headers = {"X-Participant-Secret": participant["secret"]}
        async with httpx.AsyncClient(base_url=base_url, timeout=60) as client:
            offer = {"participant": participant["participant"], "system": system, "topic": participant["topics"][0],
                     "sdp": pc.localDescription.sdp, "type": pc.localDescription.type}
            response = await client.post("/participate/api/offer", json=offer, headers=headers)
            assert response.status_code == 200, response.text
            self.answer = response.json()
            await pc.setRemoteDescription(RTCSessionDescription(sdp=self.answer["sdp"], type=self.answer["type"]))
            await asyncio.get_running_loop().run_in_executor(None, self._stop.wait, 300)
            ended = await client.post(f"/participate/api/end/{self.answer['session_id']}", headers=headers)
            assert ended.status_code == 200, ended.text
        await pc.close()

    def session_id(self) -> int | None:
        assert self._failure is None, self._failure
        return self.answer.get("session_id")

    def hang_up(self) -> None:
        self._stop.set()
        self._thread.join(120)
        assert not self._thread.is_alive(), "the other participant's call did not end"
        if self._failure is not None:
            raise self._failure


def test_a_participant_who_withdraws_during_their_second_call_leaves_nothing(
        db_url, fake_mic, tmp_path, cascade_components):  # noqa: F811
    data_root = tmp_path / "data"
    app = build_app(database_url=db_url, data_root=data_root, researcher_password="pw")
    engine, backend = app.state.engine, app.state.engine.dialect.name
    calls = app.state.participant_calls
    calls.cascade_components({}, loaded=cascade_components)
    with session_scope(engine) as session:
        apply_config(session, parse_config({
            "name": "rights", "title": "Withdrawal", "session_seconds": 60, "min_call_seconds": 1,
            "questionnaire": {}, "withdrawn_code": CODE, "withdrawn_url": RETURN_URL,
            "consent_items": [{"id": "share", "text": "My recordings may be shared with other researchers.",
                               "share": "researchers"}],
            "systems": [{"name": "alpha", "kind": "cascaded"}, {"name": "beta", "kind": "cascaded"}]}))
    mic_path, _, _ = fake_mic
    speech = render_speech([Utterance(0, 0.3, "hello I would like to talk about hiking")], duration=4.0,
                           channels=1).samples[0]
    other = None
    with serve(app) as base_url:
        # the other participant: a call of their own, first
        staying = httpx.post(f"{base_url}/participate/api/rights/consent",
                             json={"external_id": STAYING, "consents": {"share": True}}).json()
        asyncio.run(participant_call(base_url, staying, staying["next_systems"][0], speech, 4.0))
        their_next = httpx.get(f"{base_url}/participate/api/participant/{staying['participant']}").json()
        try:
            with sync_playwright() as playwright:
                context = _context(playwright, tmp_path, mic_path)
                try:
                    page = context.pages[0] if context.pages else context.new_page()
                    page.goto(f"{base_url}/participate/study/rights?pid={LEAVING}")
                    _pass_check(page)
                    page.get_by_label("My recordings may be shared with other researchers.").check()
                    page.click("#agree")
                    expect(page.get_by_role("button", name="Withdraw from the study")).to_be_visible()
                    _to_call(page)
                    _wait_for_recorded_audio(engine, data_root, LEAVING, 2.0)
                    page.click("#end")
                    expect(page.locator("#done-text")).to_contain_text("next system", timeout=60_000)
                    expect(page.get_by_role("button", name="Withdraw from the study")).to_be_visible()
                    expect(page.locator("#withdraw-later-link")).to_have_attribute(
                        "href", re.compile(r"/participate/withdraw/rights#[\w-]+\.[\w-]+$"))
                    # the other participant's second call starts, and runs through the withdrawal
                    other = RunningCall(base_url, staying, their_next["next_systems"][0], speech)
                    running = wait_until(other.session_id, 60, "the other participant's second call to start")
                    wait_until(lambda: _recorded_s(data_root, running) >= 1.0, 60,
                               "a second of the other participant's second call recorded")
                    page.click("#next")
                    _to_call(page)  # the second call
                    with session_scope(engine) as session:
                        leaving = session.exec(select(Participant).where(Participant.external_id == LEAVING)).one()
                        pseudonym, leaving_id = leaving.pseudonym, leaving.id
                        assert leaving.consents["share"]["agreed"] is True
                        theirs = session.exec(select(ConversationSession).where(
                            ConversationSession.participant_id == leaving_id)).all()
                        assert sorted(c.status for c in theirs) == ["active", "complete"]
                        gone_sessions = {c.id for c in theirs}
                    before_rows, before_files = _rows(engine), _files(data_root)
                    page.get_by_role("button", name="Withdraw from the study").click()
                    expect(page.locator("#withdraw-confirm")).to_contain_text(
                        "everything recorded of you in this study is deleted")
                    expect(page.locator("#withdraw-code-note")).to_contain_text("a code to return the study")
                    expect(page.locator("#call-state")).to_have_text("Connected: talk now.")  # asked first: still on
                    started = time.monotonic()
                    with page.expect_response(lambda r: "/api/withdraw/" in r.url) as withdrawal:
                        page.get_by_role("button", name="Withdraw and delete my data").click()
                    expect(page.get_by_role("heading", name="You have withdrawn from the study")).to_be_visible()
                    took_s = time.monotonic() - started
                    timing = withdrawal.value.request.timing
                    server_s = (timing["responseEnd"] - timing["requestStart"]) / 1000
                    expect(page.locator("#withdrawn-code")).to_have_text(CODE)
                    expect(page.get_by_role("link", name="Return to Prolific")).to_have_attribute(
                        "href", RETURN_URL.replace("{code}", CODE))
                    expect(page.get_by_role("button", name="Withdraw from the study")).to_be_hidden()
                finally:
                    context.close()

            # the other participant's call went on: still running, its audio recorded and its lease
            # renewed after the erasure (the database scrubbed meanwhile), then stored complete
            assert calls.calls[running].status is None
            after_withdrawal_s, withdrawn_at = _recorded_s(data_root, running), _heartbeat_at(engine, running)
            wait_until(lambda: _recorded_s(data_root, running) >= after_withdrawal_s + 1.0, 30,
                       "the other participant's call to record on after the withdrawal")
            wait_until(lambda: _heartbeat_at(engine, running) > withdrawn_at, 30,
                       "the other participant's call to renew its lease after the withdrawal")
        finally:
            if other is not None:
                other.hang_up()
        with session_scope(engine) as session:
            assert session.get(ConversationSession, running).status == "complete"
        assert not {"failed", "timeout"} & set(other.said), other.said
        other_s = _recorded_s(data_root, running)

        # the link opened again by the same person: told they withdrew, not enrolled again
        again = httpx.post(f"{base_url}/participate/api/rights/consent", json={"external_id": LEAVING})
        assert again.status_code == 409 and "already withdrawn" in again.json()["error"]

    export = tmp_path / "export"
    started = time.monotonic()
    done = run_cli_process("analysis", "export-dataset", "--study", "rights", "--out", export,
                           "--database-url", db_url, "--data-root", data_root)
    export_s = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    needles = [pseudonym.encode(), LEAVING.encode()]
    database, files, exported = database_bytes(engine), _files(data_root), _files(export)
    assert not [n for n in needles if n in database], backend
    assert _holding(files, needles) == []
    assert _holding(exported, needles) == []
    # the searches find what is there: the other participant, in the database and in the export
    assert STAYING.encode() in database and _holding(exported, [staying["participant"].encode()])

    # the other participant's rows and files, byte for byte (their call running meanwhile apart)
    # (after: only the running call's rows left out, so a row of theirs left behind would show)
    after_rows = _rows(engine)
    # the audit trail gained the withdrawal, by the participant, and the export, naming nobody
    trail = sorted(after_rows.pop("audit_event"), key=lambda e: e["id"])
    assert [(e["actor"], e["action"]) for e in trail] == [("participant", "withdrawn"), (command_line_actor(), "exported_dataset")]
    assert before_rows.pop("audit_event") == []
    kept_rows = _others(after_rows, {running})
    assert kept_rows == _others(before_rows, gone_sessions | {running}, leaving_id, LEAVING)
    assert _outside(files, {running}) == _outside(before_files, gone_sessions | {running})
    assert any(name.startswith("sessions/") for name in _outside(files, {running}))  # their first call is there
    with session_scope(engine) as session:
        [record] = session.exec(select(ErasureRecord)).all()
        assert (record.reason, record.erased_by) == ("withdrawn", "participant")
        counts = record.counts
    rows_removed = {k: v for k, v in counts.items() if k not in ("files", "bytes")}
    print(f"\n{backend}: withdrawal during a call: answered in {server_s:.2f} s (the call ended, its session stored, "
          f"everything erased and the database scrubbed), withdrawn screen {took_s:.2f} s after the click; "
          f"removed {sum(rows_removed.values())} rows {rows_removed}, {counts['files']} files, "
          f"{counts['bytes']} bytes; searched {len(database)} database bytes, {len(files)} files under the data root "
          f"({sum(map(len, files.values()))} bytes) and {len(exported)} exported files "
          f"({sum(map(len, exported.values()))} bytes, export {export_s:.1f} s): no trace; the other participant's "
          f"{sum(map(len, kept_rows.values()))} rows of every table and "
          f"{len(_outside(files, {running}))} files byte-identical, their call through it stored complete "
          f"({other_s:.1f} s recorded)")
    engine.dispose()

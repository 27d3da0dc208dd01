"""A participant withdraws during their second call, in a real browser, on SQLite and on
PostgreSQL: afterwards neither their pseudonym nor their Prolific ID occurs anywhere (the database's
bytes: SQLite's file, log and shared memory, free pages and old log frames included, or a full
`pg_dump`; every file under the data root, inside compressed files too; a fresh dataset export),
and the other participant's rows and files are byte-identical to before.

The other participant calls first (an aiortc peer, the page's part played in Python); the one who
withdraws consents in Chromium with an optional consent ticked, has a first call, starts a second
and withdraws while it is connected: the page asks first, then shows the study's withdrawn code and
its return link.
"""

from __future__ import annotations

import asyncio
import gzip
import io
import re
import tarfile
import time
import zipfile
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa
from playwright.sync_api import expect, sync_playwright
from sqlmodel import select

from app import build_app
from storage.db import session_scope
from storage.models import ConversationSession, ErasureRecord, Participant, Recording
from studies.config import apply_config, parse_config
from tests.browser import serve
from tests.command_line import run_cli_process
from tests.databases import database_bytes
from tests.rendered_speech import Utterance, render_speech
from tests.studies.aiortc_participant import participant_call
from tests.studies.test_browser_call import _context, _pass_check, _wait_for_recorded_audio
from tests.studies.test_browser_call import fake_mic  # noqa: F401  (pytest fixture)

pytestmark = pytest.mark.alone
LEAVING, STAYING = "PRLFC-WITHDRAW-5f0c1e", "PRLFC-OTHER-9a7d3b"
CODE, RETURN_URL = "WDRAWN7", "https://app.prolific.com/submissions/complete?cc={code}"


def _rows(engine) -> dict[str, list]:
    with engine.connect() as connection:
        tables = [t for t in sa.inspect(connection).get_table_names()
                  if t not in ("alembic_version", "analysis_request", "erasure_record")]
        return {t: sorted(map(tuple, connection.exec_driver_sql(f'SELECT * FROM "{t}"').fetchall()), key=repr)
                for t in tables}


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _readable(name: str, data: bytes) -> list[bytes]:
    """The file's bytes and, for a compressed file, its members' too."""
    found = [data]
    try:
        if name.endswith(".gz"):
            found.append(gzip.decompress(data))
        elif zipfile.is_zipfile(io.BytesIO(data)):
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                found += [archive.read(member) for member in archive.namelist()]
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


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_participant_who_withdraws_during_their_second_call_leaves_nothing(
        backend, request, fake_mic, tmp_path, cascade_components):  # noqa: F811
    url = request.getfixturevalue("sqlite_url" if backend == "sqlite" else "postgres_url")
    data_root = tmp_path / "data"
    app = build_app(database_url=url, data_root=data_root, researcher_password="pw")
    engine = app.state.engine
    app.state.participant_calls.cascade_components({}, loaded=cascade_components)
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
    with serve(app) as base_url:
        # the other participant: a call of their own, first
        staying = httpx.post(f"{base_url}/participate/api/rights/consent",
                             json={"external_id": STAYING, "consents": {"share": True}}).json()
        asyncio.run(participant_call(base_url, staying, staying["next_systems"][0], speech, 4.0))
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
                expect(page.locator("#withdraw-later-link")).to_have_attribute(
                    "href", re.compile(r"/participate/withdraw/rights#[\w-]+\.[\w-]+$"))
                page.click("#next")
                _to_call(page)  # the second call
                with session_scope(engine) as session:
                    leaving = session.exec(select(Participant).where(Participant.external_id == LEAVING)).one()
                    pseudonym, leaving_id = leaving.pseudonym, leaving.id
                    assert leaving.consents["share"]["agreed"] is True
                    running = session.exec(select(ConversationSession).where(
                        ConversationSession.participant_id == leaving_id)).all()
                    assert sorted(c.status for c in running) == ["active", "complete"]
                before_rows, before_files = _rows(engine), _files(data_root)
                page.get_by_role("button", name="Withdraw from the study").click()
                expect(page.locator("#withdraw-confirm")).to_contain_text("everything recorded of you in this study "
                                                                          "is deleted")
                expect(page.locator("#call-state")).to_have_text("Connected: talk now.")  # asked first: still on
                started = time.monotonic()
                page.get_by_role("button", name="Withdraw and delete my data").click()
                expect(page.get_by_role("heading", name="You have withdrawn from the study")).to_be_visible()
                took_s = time.monotonic() - started
                expect(page.locator("#withdrawn-code")).to_have_text(CODE)
                expect(page.get_by_role("link", name="Return to Prolific")).to_have_attribute(
                    "href", RETURN_URL.replace("{code}", CODE))
                expect(page.get_by_role("button", name="Withdraw from the study")).to_be_hidden()
            finally:
                context.close()
        # the link opened again by the same person: told they withdrew, not enrolled again
        again = httpx.post(f"{base_url}/participate/api/rights/consent", json={"external_id": LEAVING})
        assert again.status_code == 409 and "already withdrawn" in again.json()["error"]

    export = tmp_path / "export"
    done = run_cli_process("analysis", "export-dataset", "--study", "rights", "--out", export,
                           "--database-url", url, "--data-root", data_root)
    assert done.returncode == 0, done.stderr
    needles = [pseudonym.encode(), LEAVING.encode()]
    assert not [n for n in needles if n in database_bytes(engine)], backend
    assert _holding(_files(data_root), needles) == []
    assert _holding(_files(export), needles) == []
    assert STAYING.encode() in database_bytes(engine)  # the search finds what is there

    # the other participant's rows and files, byte for byte
    gone_sessions = {r[0] for r in before_rows["conversation_session"] if r[1] == leaving_id}
    gone = {"participant": {leaving_id}, "conversation_session": gone_sessions,
            "recording": {r[0] for r in before_rows["recording"] if r[1] in gone_sessions},
            "connection_check": {r[0] for r in before_rows["connection_check"] if r[2] == LEAVING}}
    after_rows = _rows(engine)
    for table, rows in before_rows.items():
        assert after_rows[table] == [r for r in rows if r[0] not in gone.get(table, set())], table
    kept = {name: data for name, data in before_files.items()
            if not any(name.startswith(f"sessions/{i}/") for i in gone_sessions) and not name.startswith(".cache/")}
    assert {n: d for n, d in _files(data_root).items() if not n.startswith(".cache/")} == kept
    assert any(name.startswith("sessions/") for name in kept)  # the other participant's call is there
    with session_scope(engine) as session:
        [record] = session.exec(select(ErasureRecord)).all()
        assert (record.reason, record.erased_by) == ("withdrawn", "participant")
        counts = record.counts
        assert session.exec(select(Recording).where(Recording.session_id.in_(gone_sessions))).all() == []
    print(f"{backend}: withdrawal answered in {took_s:.2f} s; removed {counts}")
    engine.dispose()

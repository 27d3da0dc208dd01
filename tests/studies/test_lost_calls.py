"""Calls that are lost, in a real browser: the participant's browser goes away without ending the
call (the server closes it when the connection times out, keeping the audio that arrived), and
the app's process is killed during a call (the page says the connection was lost; the next start
marks the session incomplete, ending at its last audio, with the audio written).

Neither times the call: they run beside the other tests, not in the group that needs the machine
to itself (tests/studies/test_browser_call.py holds those and the fixtures shared here).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import soundfile
from playwright.sync_api import expect, sync_playwright
from sqlmodel import select

from app import build_app
from storage.db import make_engine, session_scope
from storage.files import resolve
from storage.models import ConversationSession, Participant, Recording, utc_now
from studies.sessions import LEASE_S
from studies.webrtc import MIC_SILENT_S
from tests.browser import answers, free_port
from tests.studies.test_browser_call import _context, _start_call, _wait_for_recorded_audio
from tests.studies.test_browser_call import fake_mic, served  # noqa: F401  (pytest fixtures)
from tests.waiting import wait_until


def test_dropped_connection_keeps_the_audio(served, fake_mic, tmp_path):  # noqa: F811
    app, base_url, data_root = served
    mic_path, _, _ = fake_mic
    with sync_playwright() as playwright:
        context = _context(playwright, tmp_path, mic_path)
        page = context.pages[0] if context.pages else context.new_page()
        _start_call(page, base_url, "browser-drop")
        expect(page.locator("#call-state")).to_have_text("Connected: talk now.", timeout=60_000)
        _wait_for_recorded_audio(app.state.engine, data_root, "browser-drop", 3.5, mic_peak_over=0.1)
        context.close()  # the browser goes away without ending the call
        closed_at = time.monotonic()
    engine = app.state.engine

    def ended():
        with session_scope(engine) as session:
            participant = session.exec(select(Participant).where(Participant.external_id == "browser-drop")).one()
            conversation = session.exec(
                select(ConversationSession).where(ConversationSession.participant_id == participant.id)
            ).one()
            recording = session.exec(select(Recording).where(Recording.session_id == conversation.id)).first()
        return (conversation, recording) if conversation.status != "active" else None

    conversation, recording = wait_until(ended, 40, "the server to end the dropped call")
    # ended by its silent microphone, not 30 s later by ICE's consent expiring
    assert time.monotonic() - closed_at < MIC_SILENT_S + 10
    assert conversation.status == "incomplete"
    assert recording is not None and recording.duration_s >= 3.0
    path = resolve(recording.path, data_root)
    audio, _ = soundfile.read(str(path), dtype="float32")
    assert np.abs(audio[:, 0]).max() > 0.05  # the speech that arrived is there
    events = [json.loads(line) for line in (path.parent / "timing.jsonl").read_text().splitlines()]
    assert [e["reason"] for e in events if e["event"] == "dropped"] == [f"no microphone audio for {MIC_SILENT_S:g} s"]


SERVER = """
import sys
import uvicorn
from app import build_app
from storage.db import session_scope
from studies.config import apply_config, parse_config
url, data_root, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
app = build_app(database_url=url, data_root=data_root, researcher_password="pw")
with session_scope(app.state.engine) as session:
    apply_config(session, parse_config({"name": "browser", "session_seconds": 60, "questionnaire": {},
                                        "systems": [{"name": "cascaded", "kind": "cascaded"}]}))
app.state.participant_calls.cascade_components({})  # load the models before the call
print("ready", flush=True)
uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
"""


def test_killed_server_leaves_a_readable_recording_and_an_incomplete_session(fake_mic, tmp_path):  # noqa: F811
    mic_path, _, _ = fake_mic
    data_root = tmp_path / "data"
    url = f"sqlite:///{data_root / 'app.db'}"
    port = free_port()
    root = Path(__file__).resolve().parents[2]
    server = subprocess.Popen([sys.executable, "-c", SERVER, url, str(data_root), str(port)], cwd=root,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout.readline().strip() == "ready"
        base_url = f"http://127.0.0.1:{port}"
        wait_until(lambda: answers(base_url + "/"), 30, "the app process to answer")
        with sync_playwright() as playwright:
            context = _context(playwright, tmp_path, mic_path)
            try:
                page = context.pages[0] if context.pages else context.new_page()
                _start_call(page, base_url, "browser-kill")
                expect(page.locator("#call-state")).to_have_text("Connected: talk now.", timeout=60_000)
                watcher = make_engine(url)
                _wait_for_recorded_audio(watcher, data_root, "browser-kill", 4.5, mic_peak_over=0.1)
                watcher.dispose()
                os.kill(server.pid, signal.SIGKILL)
                server.wait(timeout=10)
                # the page notices the lost connection and says what was kept
                expect(page.locator("#done-text")).to_contain_text("connection was lost", timeout=30_000)
            finally:
                context.close()
    finally:
        if server.poll() is None:
            server.kill()
    # The next start of the app, once the dead process's lease on the call expired, marks the
    # session incomplete (ending at its last audio) and registers the audio written.
    killed_at = utc_now()
    watcher = make_engine(url)
    with session_scope(watcher) as session:
        conversation = session.exec(select(ConversationSession).join(Participant)
                                    .where(Participant.external_id == "browser-kill")).one()
        last_beat = conversation.heartbeat_at or conversation.started_at
    watcher.dispose()
    wait_until(lambda: (utc_now() - last_beat).total_seconds() > LEASE_S, LEASE_S + 30,
               "the dead call's lease to expire")
    app = build_app(database_url=url, data_root=data_root, researcher_password="pw")
    with session_scope(app.state.engine) as session:
        participant = session.exec(select(Participant).where(Participant.external_id == "browser-kill")).one()
        conversation = session.exec(
            select(ConversationSession).where(ConversationSession.participant_id == participant.id)
        ).one()
        recording = session.exec(select(Recording).where(Recording.session_id == conversation.id)).one()
    assert conversation.status == "incomplete"
    assert conversation.ended_at <= killed_at
    assert recording.kind == "two-channel" and recording.duration_s >= 4.0
    audio, _ = soundfile.read(str(resolve(recording.path, data_root)), dtype="float32")
    assert np.abs(audio[:, 0]).max() > 0.05  # the participant's speech up to the kill is there
    app.state.engine.dispose()

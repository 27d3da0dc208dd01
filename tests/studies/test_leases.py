"""Call leases: a call running in one process is never touched by another process's
start-up or sweep while its lease is fresh; once its process dies, the lease expires and the call
is closed as incomplete, ending at its last audio (SQLite and PostgreSQL). Each "not touched" is
read after an event that would have touched it: a sweep that closed a dead call beside it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import httpx
import soundfile

from app import build_app
from storage.db import session_scope
from storage.models import ConversationSession, Recording, utc_now
from storage.records import get_or_create_participant, get_system, start_session
from studies.config import apply_config, parse_config
from studies.sessions import LEASE_S, call_relpath, timing_relpath
from tests.browser import serve
from tests.databases import engine  # noqa: F401  (pytest fixture: real SQLite and PostgreSQL databases)
from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]

# A call as its owning process runs it: the recorder writes 20 ms packets in real time and the
# process renews its lease every HEARTBEAT_S (what studies.webrtc.Call does), until killed.
CALL_PROCESS = """
import sys, time, numpy as np
from storage.db import make_engine
from studies.recorder import TwoChannelRecorder
from studies.sessions import HEARTBEAT_S, renew_lease
from tests.waiting import sleep_until
engine = make_engine(sys.argv[1])
recorder = TwoChannelRecorder(sys.argv[2], sys.argv[3], flush_s=0.25)
tone = (np.sin(np.arange(320) * 0.3) * 8000).astype(np.int16)
position, start = 0, time.monotonic()
renewed = start
print("running", flush=True)
while True:
    recorder.add_mic(tone, pts=position)
    position += 320
    if time.monotonic() - renewed >= HEARTBEAT_S:
        assert renew_lease(engine, int(sys.argv[4])), "lease lost"
        renewed = time.monotonic()
    sleep_until(start + position / 16000)  # a live microphone: real time is what the recorder meets
"""


def started_long_ago(db, session_id: int) -> datetime:
    """Start and last heartbeat of the session three leases ago (as a call that has run that long):
    from then on only a renewed heartbeat keeps it from a sweep. Returns that moment."""
    long_ago = utc_now() - timedelta(seconds=3 * LEASE_S)
    with session_scope(db) as session:
        conversation = session.get(ConversationSession, session_id)
        conversation.started_at = conversation.heartbeat_at = long_ago
        session.add(conversation)
    return long_ago


def session_row(db, session_id: int) -> ConversationSession:
    with session_scope(db) as session:
        conversation = session.get(ConversationSession, session_id)
        session.expunge(conversation)
        return conversation


def sweep_a_dead_call_beside(db, study, system, live_id: int) -> None:
    """Open a call of a dead process beside the live call `live_id`, wait until a periodic sweep
    closes it, then until the live call renews its heartbeat after that sweep."""
    with session_scope(db) as session:
        dead_id = start_session(session, get_or_create_participant(session, study), system, "hiking").id
    started_long_ago(db, dead_id)
    wait_until(lambda: session_row(db, dead_id).status == "incomplete", 3 * LEASE_S,
               "a periodic sweep closing the dead call")
    swept_at = utc_now()
    wait_until(lambda: heartbeat_after(db, live_id, swept_at), 30, "a heartbeat after the sweep")


def heartbeat_after(db, session_id: int, moment: datetime) -> bool:
    return session_row(db, session_id).heartbeat_at > moment


def test_a_second_process_leaves_a_live_call_alone_and_closes_a_dead_one(engine, tmp_path):
    url = engine.url.render_as_string(hide_password=False)
    data_root = tmp_path / "data"
    with session_scope(engine) as session:
        study = apply_config(session, parse_config({"name": "lease", "systems": [{"name": "c", "kind": "cascaded"}]}))
        system = get_system(session, study, "c")
        session_id = start_session(session, get_or_create_participant(session, study), system, "hiking").id
    long_ago = started_long_ago(engine, session_id)
    wav = data_root / call_relpath(session_id)
    wav.parent.mkdir(parents=True)
    call = subprocess.Popen([sys.executable, "-c", CALL_PROCESS, url, str(wav),
                             str(data_root / timing_relpath(session_id)), str(session_id)],
                            cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert call.stdout.readline().strip() == "running"
        wait_until(lambda: heartbeat_after(engine, session_id, long_ago), 30, "the call's first heartbeat")
        # Another app process starts (its start-up sweep runs) and the `studies sweep` command runs.
        app = build_app(database_url=url, data_root=data_root, researcher_password="pw")
        with serve(app) as base_url:
            assert httpx.get(base_url + "/participate/").status_code == 200
            sweep = subprocess.run([sys.executable, "-m", "studies", "--url", url, "sweep"], cwd=ROOT,
                                   capture_output=True, text=True, env={**os.environ, "TURNTAKING_DATA": str(data_root)})
            assert sweep.returncode == 0 and "marked 0 open session(s)" in sweep.stdout, sweep.stdout + sweep.stderr
            # A call of a dead process beside it: the app's periodic sweep closing it is the sweep
            # that leaves the live call alone.
            sweep_a_dead_call_beside(engine, study, system, session_id)
            assert session_row(engine, session_id).status == "active"
            assert call.poll() is None, "the call process lost its lease"
            # Its WAV was never rewritten by another process: it keeps growing as one valid file.
            first = soundfile.info(str(wav)).frames
            wait_until(lambda: soundfile.info(str(wav)).frames > first, 30, "the call's WAV growing")

            # The call's process dies: after its lease, the running app's sweep closes the call.
            written = soundfile.info(str(wav)).frames
            os.kill(call.pid, signal.SIGKILL)
            call.wait(timeout=10)
            killed_at = utc_now()
            conversation = wait_until(lambda: (row := session_row(engine, session_id)).status != "active" and row,
                                      3 * LEASE_S, "the sweep closing the killed call")
        app.state.engine.dispose()
    finally:
        if call.poll() is None:
            call.kill()
    assert conversation.status == "incomplete"
    # It ended when its audio stopped, not when the sweep found it.
    assert abs((conversation.ended_at - killed_at).total_seconds()) < 2.0
    with session_scope(engine) as session:
        recording = session.exec(Recording.__table__.select().where(Recording.session_id == session_id)).one()
    # Registered whole: every sample on disk before the kill, and the file as it lies.
    assert recording.duration_s * 16000 >= written
    assert soundfile.info(str(wav)).frames / 16000 == recording.duration_s

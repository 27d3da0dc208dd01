"""Two app processes on one PostgreSQL database. A call runs (its owning
process renews its lease), annotators work through both processes, and one app process is killed
and started again in the middle: the call is not touched, no judgment is lost and every pair ends
with exactly K judgments."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import soundfile

from annotation.assignment import AssignmentSettings
from annotation.register import register_benchmark
from annotation.simulate import Behaviour, check_judgments, run_annotators, stored_trials
from annotation.trials import create_annotators, get_study
from storage.db import init_db, make_engine, session_scope
from storage.models import ConversationSession
from storage.records import get_or_create_participant, get_system, start_session
from studies.config import apply_config, parse_config
from studies.sessions import call_relpath, timing_relpath
from tests.annotation.small_benchmark import write_small_benchmark
from tests.browser import answers, free_port
from tests.databases import postgres_url  # noqa: F401  (pytest fixture)
from tests.studies.test_leases import CALL_PROCESS, heartbeat_after, started_long_ago, sweep_a_dead_call_beside
from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parents[1]


def start_app(url: str, data_root: Path, port: int) -> subprocess.Popen:
    """`python app.py` as deployed: its own process on the shared database."""
    env = {**os.environ, "TURNTAKING_DATA": str(data_root), "TURNTAKING_RESEARCHER_PASSWORD": "pw"}
    # The call here is a process of its own writing a tone: no app process loads the dialogue models.
    server = subprocess.Popen([sys.executable, "app.py", "--port", str(port), "--database-url", url,
                               "--no-model-preload"], cwd=ROOT,
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    def started() -> bool:
        assert server.poll() is None, server.stderr.read()
        return answers(f"http://127.0.0.1:{port}/")

    wait_until(started, 120, f"the app on port {port} to start")
    return server


def test_two_app_processes_one_restarted_disturb_no_call_and_lose_no_judgment(postgres_url, tmp_path):
    data_root = tmp_path / "data"
    engine = make_engine(postgres_url)
    init_db(engine)
    bench = write_small_benchmark(tmp_path / "bench", pairs=10, controls=1)
    settings = AssignmentSettings(judgments_per_pair=2, trials_per_annotator=6, attention_every=5)
    with session_scope(engine) as session:
        register_benchmark(session, bench, "s", data_root, settings, attention_checks=1, practice=1, pause_s=1.0)
        tokens = create_annotators(session, get_study(session, "s"), 8)
        study = apply_config(session, parse_config({"name": "calls", "systems": [{"name": "c", "kind": "cascaded"}]}))
        system = get_system(session, study, "c")
        session_id = start_session(session, get_or_create_participant(session, study), system, "hiking").id
    long_ago = started_long_ago(engine, session_id)
    wav = data_root / call_relpath(session_id)
    wav.parent.mkdir(parents=True)
    ports = [free_port(), free_port()]
    # The call starts first (its process renews the lease from then on), then the two apps.
    call = subprocess.Popen([sys.executable, "-c", CALL_PROCESS, postgres_url, str(wav),
                             str(data_root / timing_relpath(session_id)), str(session_id)],
                            cwd=ROOT, stdout=subprocess.PIPE, text=True)
    servers = []
    try:
        assert call.stdout.readline().strip() == "running"
        # From its first heartbeat on, only the heartbeat keeps the call from any sweep.
        wait_until(lambda: heartbeat_after(engine, session_id, long_ago), 30, "the call's first heartbeat")
        servers += [start_app(postgres_url, data_root, port) for port in ports]
        results = {}

        def annotate(name, port, part, seed):
            results[name] = run_annotators(f"http://127.0.0.1:{port}", part, Behaviour(resubmit=0.2), seed=seed)

        # Annotators on process B while process A is killed and started again (its start-up
        # sweep runs while the call, owned by another process, is live).
        on_b = threading.Thread(target=annotate, args=("b", ports[1], tokens[4:], 2))
        on_b.start()
        os.kill(servers[0].pid, signal.SIGKILL)
        servers[0].wait(timeout=10)
        servers[0] = start_app(postgres_url, data_root, ports[0])
        annotate("a", ports[0], tokens[:4], 1)
        on_b.join()
        # A call of a dead process: a periodic sweep (of either app) closing it leaves the live one alone.
        sweep_a_dead_call_beside(engine, study, system, session_id)

        with session_scope(engine) as session:
            assert session.get(ConversationSession, session_id).status == "active"
            check = check_judgments(session, "s", k=2)
            acknowledged = {trial for result in results.values() for _, trial in result.stored}
            assert stored_trials(session) == acknowledged  # nothing lost, nothing unacknowledged
        assert results["a"].errors == [] and results["b"].errors == []
        assert call.poll() is None, "the call process lost its lease"
        frames = soundfile.info(str(wav)).frames
        wait_until(lambda: soundfile.info(str(wav)).frames > frames, 30, "the call's WAV growing")  # one valid file
    finally:
        for process in [call, *servers]:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=10)
        engine.dispose()
    assert check["pairs_with_exactly_k"] == check["pairs"] == 11 and check["duplicates"] == 0
    assert check["per_pair_min"] == check["per_pair_max"] == 2

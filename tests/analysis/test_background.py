"""Analysis off the request path.

A call ending queues its study; a real `python -m analysis worker` process computes the session's
voice activity, statistics, judge metrics and naturalness before any researcher looks; the views
of the web app read only the cache and say what is still being computed. The queue keeps one
worker per study across processes (SQLite and PostgreSQL), takes over from a dead worker and
misses no request that arrives during a pass."""

from __future__ import annotations

import json
import threading
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
import soundfile
import sqlalchemy as sa

from analysis import demo_study
from analysis.background import WorkerProcess, run_worker
from analysis.dashboard import Researcher
from analysis.study import latest_results, study_id_by_name
from analysis.views import StudyAnalysis, study_view
from annotation.register import register_benchmark
from annotation.trials import authenticate, create_annotators, current_state, get_study, submit
from storage.analysis_queue import (
    analysis_state,
    claim_study,
    finish_study,
    report_progress,
    request_analysis,
)
from storage.db import init_db, make_engine, session_scope
from storage.models import AnalysisRequest, Assignment, ClipPair, utc_now
from storage.records import get_or_create_participant, get_or_create_study, get_or_create_system, start_session
from studies.sessions import call_relpath, finish_session
from tests import command_line
from tests.annotation.small_benchmark import write_small_benchmark
from tests.databases import db_url, postgres_url, sqlite_url  # noqa: F401
from tests.studies.conftest import espeak_16k
from tests.waiting import wait_until

RATE = 16000


def _engine(url):
    engine = make_engine(url)
    init_db(engine)
    return engine


def _seeded(tmp_path, sessions_per_system=2, seconds=60.0):
    engine = _engine(f"sqlite:///{tmp_path / 'study.db'}")
    rng = np.random.default_rng(0)
    with session_scope(engine) as session:
        study = get_or_create_study(session, "s")
        demo_study.seed_sessions(session, study, tmp_path, sessions_per_system, seconds, rng, audio=False)
        pairs = demo_study.seed_pairs(session, study, 2, rng, sources=4)
        demo_study.seed_judgments(session, study, pairs, 4, careless=1, per_pair=4, rng=rng)
    return engine


def _speech(text: str, path: Path) -> np.ndarray:
    samples = espeak_16k(text, path)
    loud = np.flatnonzero(np.abs(samples) > 0.01)
    return samples[loud[0]:loud[-1] + 1]


# -- a call ending ------------------------------------------------------------------------------


def _call(engine, data_root: Path, tmp_path: Path, participant_name: str, gap_s: float = 0.8) -> tuple[int, int]:
    """(study id, session id) of a call of the study "calls" as the recorder leaves it: the
    participant speaks from 0.5 s, the system answers `gap_s` after the participant stops."""
    with session_scope(engine) as session:
        # (calls of about 6 s: the study takes them, as a study file's min_call_seconds says)
        study = get_or_create_study(session, "calls", config={"min_call_seconds": 3})
        system = get_or_create_system(session, study, "cascaded", "cascaded", {})
        participant = get_or_create_participant(session, study, external_id=participant_name, consent_at=utc_now())
        study_id, session_id = study.id, start_session(session, participant, system, "travel").id
    question = _speech("Where did you go on your last holiday", tmp_path / "q.wav")
    answer = _speech("I went to the mountains with my family", tmp_path / "a.wav")
    system_start = 0.5 + len(question) / RATE + gap_s
    total = int((system_start + len(answer) / RATE + 1.0) * RATE)
    call = np.zeros((total, 2), dtype=np.float32)
    call[int(0.5 * RATE):int(0.5 * RATE) + len(question), 0] = question
    call[int(system_start * RATE):int(system_start * RATE) + len(answer), 1] = answer
    wav = data_root / call_relpath(session_id)
    wav.parent.mkdir(parents=True)
    soundfile.write(str(wav), call, RATE)
    return study_id, session_id


def test_a_call_ending_is_analysed_by_the_worker_process_without_a_researcher_visit(tmp_path):
    data_root = tmp_path / "data"
    url = f"sqlite:///{tmp_path / 'app.db'}"
    engine = _engine(url)
    study_id, session_id = _call(engine, data_root, tmp_path, "p1")

    worker = WorkerProcess(url, data_root, nice=0)
    worker.start()
    try:
        finish_session(engine, session_id, "complete", data_root)  # what the call page's end does
        subject = f"session:{session_id}"
        kinds = ("voice-activity", "stats", "judge-metrics", "naturalness")

        def analysed() -> bool:
            assert worker.process.poll() is None, "the worker process died"
            found = {k for k in kinds if latest_results(engine, k, [subject])}
            return found == set(kinds) and analysis_state(engine, study_id).status == "done"

        wait_until(analysed, 240, f"the worker's {', '.join(kinds)} of the ended call", poll_s=1)
    finally:
        worker.stop()
    stats = latest_results(engine, "stats", [subject])[subject]
    # One shift from the participant to the system, its gap as placed (voice activity: +- 0.25 s).
    assert stats["counts"]["gap"] == 1
    assert stats["durations_s"]["gap"] == pytest.approx(0.8, abs=0.25)
    # Nothing left for a view to compute: every view reads the cache only.
    analysis = StudyAnalysis(engine, "calls", data_root, compute=False)
    _ = analysis.statistics, analysis.judge_results, analysis.naturalness()
    assert analysis.pending == {}
    assert set(analysis.statistics) == {session_id}


def test_a_recording_that_cannot_be_analysed_is_reported_and_the_others_go_on(tmp_path):
    data_root = tmp_path / "data"
    engine = _engine(f"sqlite:///{tmp_path / 'app.db'}")
    study_id, good = _call(engine, data_root, tmp_path, "p1")
    _, bad = _call(engine, data_root, tmp_path, "p2")
    finish_session(engine, good, "complete", data_root)
    finish_session(engine, bad, "complete", data_root)
    soundfile.write(str(data_root / call_relpath(bad)), np.zeros((16000, 2), dtype=np.float32), RATE)  # altered

    assert run_worker(engine, data_root, once=True) == 1
    assert analysis_state(engine, study_id).status == "done"
    analysis = StudyAnalysis(engine, "calls", data_root, compute=False)
    assert set(analysis.statistics) == {good} and analysis.pending == {}
    assert list(analysis.activity_failures) == [bad] and "ChecksumMismatch" in analysis.activity_failures[bad]
    notes = study_view(analysis, "statistics").notes
    assert any(note.startswith("**Left out: 1 session(s)") and f"session {bad}:" in note for note in notes)
    # Given up on until the recording changes: no view re-queues it, no pass tries it again.
    Researcher(engine, data_root, background=True).show("statistics", "calls")
    assert analysis_state(engine, study_id).status == "done"


# -- the views -----------------------------------------------------------------------------------


def test_views_read_only_the_cache_and_say_what_is_still_computing(tmp_path):
    engine = _seeded(tmp_path)
    researcher = Researcher(engine, tmp_path, background=True)
    study_id = study_id_by_name(engine, "s")
    with session_scope(engine) as session:
        session.execute(sa.delete(AnalysisRequest))  # as if no call had ended yet: nothing queued

    notes = researcher.show("judge", "s")[0]
    assert notes.startswith("**Partial results**")
    assert "judge metrics: 6" in notes and "Queued" in notes
    # Nothing was computed in the request; the study was queued for the worker instead.
    assert latest_results(engine, "judge-metrics", [f"session:{i}" for i in range(1, 10)]) == {}
    assert analysis_state(engine, study_id).status == "queued"
    line, busy, _ = researcher.status("s", False)
    assert busy and "Queued" in line

    assert run_worker(engine, tmp_path, once=True) == 1
    line, busy, bump = researcher.status("s", True)
    assert (line, busy) == ("", False) and isinstance(bump, float)  # the open view is shown again
    notes = researcher.show("judge", "s")[0]
    assert "Partial" not in notes and notes.startswith("Judge:")
    naturalness = researcher.show("naturalness", "s")[0]
    assert "Partial" not in naturalness


def test_fill_command_shows_progress_and_a_second_run_computes_nothing(tmp_path):
    _seeded(tmp_path, sessions_per_system=1, seconds=30.0)
    # the real process once; then `main(argv)` in this process (an interpreter start costs seconds)
    command = ["fill", "--study", "s", "--data-root", str(tmp_path), "--database-url",
               f"sqlite:///{tmp_path / 'study.db'}"]
    first = command_line.run_cli_process("analysis", *command)
    assert first.returncode == 0, first.stderr
    assert "judge metrics: 100%" in first.stderr and "3/3" in first.stderr
    computed = json.loads(first.stdout)["computed"]
    assert computed["statistics"] == 3 and computed["judge metrics"] == 3
    again = command_line.run_cli("analysis", *command)
    assert json.loads(again.stdout)["computed"] == {}
    missing = command_line.run_cli("analysis", *command[:2], "nope", *command[3:])
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1 and "nope" in missing.stderr


# -- the queue -----------------------------------------------------------------------------------


def _study(engine, name="q") -> int:
    with session_scope(engine) as session:
        return get_or_create_study(session, name).id


def test_one_worker_claims_a_study_and_a_request_during_its_pass_runs_again(db_url):
    engine = _engine(db_url)
    study_id = _study(engine)
    assert analysis_state(engine, study_id).status == "idle"
    with session_scope(engine) as session:
        request_analysis(session, study_id)
    assert analysis_state(engine, study_id).status == "queued"

    claims, barrier = [], threading.Barrier(4)

    def claim(name):
        barrier.wait()
        claims.append((name, claim_study(engine, name)))

    threads = [threading.Thread(target=claim, args=(f"w{k}",)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [name for name, got in claims if got == study_id]
    assert len(winners) == 1 and sum(got is None for _, got in claims) == 3
    owner = winners[0]
    assert report_progress(engine, study_id, owner, "judge metrics", 5, 20, utc_now() - timedelta(seconds=10))
    state = analysis_state(engine, study_id)
    assert (state.status, state.stage, state.done, state.total) == ("computing", "judge metrics", 5, 20)
    assert state.eta_s == pytest.approx(30, abs=3)  # 2 s an item so far, 15 items left
    assert "judge metrics 5 of 20" in state.describe()

    with session_scope(engine) as session:  # a call ends while the pass runs
        request_analysis(session, study_id)
    assert claim_study(engine, "other") is None  # still owned
    finish_study(engine, study_id, owner)
    assert analysis_state(engine, study_id).status == "queued"
    assert claim_study(engine, "other") == study_id
    finish_study(engine, study_id, "other", error="ValueError: bad recording")
    state = analysis_state(engine, study_id)
    assert state.status == "failed" and "bad recording" in state.describe()
    assert claim_study(engine, "w0") is None  # nothing new was asked


def test_a_dead_workers_study_is_taken_over(db_url):
    engine = _engine(db_url)
    study_id = _study(engine)
    with session_scope(engine) as session:
        request_analysis(session, study_id)
    assert claim_study(engine, "dead") == study_id
    with session_scope(engine) as session:  # its last heartbeat, long ago
        session.execute(sa.update(AnalysisRequest).values(heartbeat_at=utc_now() - timedelta(minutes=5)))
    assert analysis_state(engine, study_id).status == "queued"
    assert claim_study(engine, "alive") == study_id
    assert not report_progress(engine, study_id, "dead", "statistics", 1, 2)  # it learns it lost the study
    assert report_progress(engine, study_id, "alive", "statistics", 1, 2)


def test_new_clips_queue_their_study_and_judgments_need_no_pass(tmp_path):
    engine = _engine(f"sqlite:///{tmp_path / 'a.db'}")
    bench = write_small_benchmark(tmp_path / "bench", pairs=3, controls=0)
    with session_scope(engine) as session:
        register_benchmark(session, bench, "clips", tmp_path / "data", attention_checks=0, practice=0)
    study_id = study_id_by_name(engine, "clips")
    assert analysis_state(engine, study_id).status == "queued"
    assert run_worker(engine, tmp_path / "data", once=True) == 1
    analysis = StudyAnalysis(engine, "clips", tmp_path / "data", compute=False)
    assert len(analysis.clip_naturalness) == 6 and analysis.pending == {}
    assert analysis_state(engine, study_id).status == "done"

    # A judgment changes no cached result: the views that use judgments read them when opened.
    with session_scope(engine) as session:
        [token] = create_annotators(session, get_study(session, "clips"), 1)
        annotator = authenticate(session, token)
        trial = current_state(session, annotator)["trial"]["id"]
        judged_pair = session.get(ClipPair, session.get(Assignment, trial).clip_pair_id).pair_id
        submit(session, annotator, {"trial": trial, "choice": "A", "rating_a": 4, "rating_b": 2, "plays_a": 1,
                                    "plays_b": 1, "listened_s_a": 3.0, "listened_s_b": 3.0, "response_s": 9.0})
    assert analysis_state(engine, study_id).status == "done"
    people = study_view(StudyAnalysis(engine, "clips", tmp_path / "data", compute=False), "metric_vs_people")
    assert people.tables["pairs"]["pair_id"].tolist() == [judged_pair]

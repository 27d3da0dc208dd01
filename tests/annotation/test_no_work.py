"""Annotators with nothing to judge get no completion code; clips that cannot be served are a 404
with a clear message and their trial can be skipped (and is reported); the researcher is warned
when links would find no work, and refused for a study whose clips have no audio.

Real SQLite files, real espeak-ng clips, the command line as a researcher runs it."""

from __future__ import annotations


import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlmodel import select

from analysis.demo_study import seed_demo_analysis
from analysis.link_checks import annotation_notes
from annotation.api import api_router
from annotation.assignment import AssignmentSettings
from annotation.register import register_benchmark
from annotation.trials import create_annotators, get_study
from storage.base_url import BASE_URL_ENV, record_base_url
from storage.db import init_db, make_engine, session_scope
from storage.demo import DEMO_STUDY, seed_demo_study
from storage.files import resolve
from storage.models import Annotator, Assignment, DialogueClip, SkippedTrial
from tests import command_line
from tests.annotation.small_benchmark import write_small_benchmark



def annotation_cli(*args, data_root, env=None):
    """`python -m annotation` as its `main(argv)` in this process (an interpreter start costs seconds)."""
    return command_line.run_cli("annotation", *args, "--data-root", data_root, "--database-url",
                                f"sqlite:///{data_root / 'app.db'}", env=env, unset=(BASE_URL_ENV, "DATABASE_URL"))


@pytest.fixture
def root(tmp_path):
    data_root = tmp_path / "data"
    engine = make_engine(f"sqlite:///{data_root / 'app.db'}")
    init_db(engine)
    with session_scope(engine) as session:
        seed_demo_study(session)  # as the app does at start-up: systems and topics, no pairs
    yield data_root, engine
    engine.dispose()


def client_for(engine, data_root):
    app = FastAPI()
    app.include_router(api_router(engine, data_root))
    return TestClient(app)


def test_an_annotator_of_a_study_without_pairs_is_told_there_is_no_work_and_gets_no_code(root):
    data_root, engine = root
    made = annotation_cli("annotators", "--study", DEMO_STUDY, "--count", "1", data_root=data_root)
    assert made.returncode == 0
    # the researcher is warned, in one line, and told how to make pairs
    assert made.stderr.strip() == (
        "warning: study 'demo' has no clip pairs: annotators would have nothing to judge "
        "(build them: python -m annotation build-pairs SOURCE --out DIR --study demo)")
    [link] = made.stdout.split()
    token = link.split("token=")[1]
    with client_for(engine, data_root) as client:
        for _ in range(2):  # asking again changes nothing
            state = client.get("/api/annotate/next", params={"token": token}).json()
            assert state == {"status": "no_work", "prolific": False}
    with session_scope(engine) as session:
        annotator = session.exec(select(Annotator)).one()
        assert annotator.completion_code is None and annotator.completed_at is None


def test_a_prolific_arrival_without_work_gets_the_return_link_not_a_code(root, tmp_path):
    data_root, engine = root
    bench = write_small_benchmark(tmp_path / "bench", pairs=1)
    with session_scope(engine) as session:
        register_benchmark(session, bench, "full", data_root, AssignmentSettings(judgments_per_pair=1),
                           attention_checks=0, practice=0, study_options={
                               "prolific_study_id": "S1", "completion_code": "PAID",
                               "completion_url": "https://app.prolific.com/submissions/complete?cc={code}",
                               "no_work_code": "NOWORK"})
        [first] = create_annotators(session, get_study(session, "full"), 1)
    with client_for(engine, data_root) as client:
        trial = client.get("/api/annotate/next", params={"token": first}).json()["trial"]
        answer = {"token": first, "trial": trial["id"], "choice": "A", "rating_a": 4, "rating_b": 2,
                  "plays_a": 1, "plays_b": 1, "listened_s_a": trial["durations"]["A"],
                  "listened_s_b": trial["durations"]["B"], "response_s": 9.0}
        assert client.post("/api/annotate/submit", json=answer).status_code == 200
        done = client.get("/api/annotate/next", params={"token": first}).json()
        assert done["status"] == "complete" and done["completion_code"] == "PAID"
        # The only pair has its K=1 judgment: the next arrival has nothing to do.
        token = client.post("/api/annotate/prolific", json={
            "study": "full", "PROLIFIC_PID": "p2", "STUDY_ID": "S1", "SESSION_ID": "s2"}).json()["token"]
        state = client.get("/api/annotate/next", params={"token": token}).json()
    assert state == {"status": "no_work", "prolific": True,
                     "return_url": "https://app.prolific.com/submissions/complete?cc=NOWORK"}
    assert "PAID" not in str(state)


def test_links_warn_when_fewer_slots_remain_than_links_and_use_the_recorded_base_url(root, tmp_path):
    data_root, engine = root
    bench = write_small_benchmark(tmp_path / "bench", pairs=2)
    with session_scope(engine) as session:
        register_benchmark(session, bench, "small", data_root, AssignmentSettings(judgments_per_pair=1),
                           attention_checks=0, practice=0)
    record_base_url(data_root, "http://studies.example.org:8080/")  # what the app does at start-up
    made = annotation_cli("annotators", "--study", "small", "--count", "3", data_root=data_root)
    assert made.returncode == 0
    assert made.stderr.strip() == ("warning: study 'small' has 2 open judgment slot(s) for 3 link(s): "
                                   "at least 1 annotator(s) would find no work")
    links = made.stdout.split()
    assert len(links) == 3 and all(link.startswith("http://studies.example.org:8080/annotate/session?token=")
                                   for link in links)
    enough = annotation_cli("annotators", "--study", "small", "--count", "2", data_root=data_root,
                            env={BASE_URL_ENV: "https://proxy.example.org"})
    assert enough.returncode == 0 and enough.stderr == ""
    assert all(link.startswith("https://proxy.example.org/annotate/session?token=") for link in enough.stdout.split())


@pytest.fixture
def silent_study(root):
    """A study seeded by `analysis demo --no-audio`: pairs whose clips have no audio file."""
    data_root, engine = root
    with session_scope(engine) as session:
        seed_demo_analysis(session, data_root, sessions_per_system=1, seconds=30.0, per_type=1, annotators=2,
                           careless=0, per_pair=1, audio=False, study_name="silent")
    return data_root, engine


def test_links_are_refused_for_a_study_whose_clips_have_no_audio(silent_study):
    data_root, engine = silent_study
    refused = annotation_cli("annotators", "--study", "silent", "--count", "1", data_root=data_root)
    assert refused.returncode == 2 and refused.stdout == ""
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: study 'silent' has ")
    assert lines[0].endswith("clip(s) without an audio file: annotators could not hear them "
                             "(register pairs built from recordings)")
    with session_scope(engine) as session:
        assert session.exec(select(Annotator).where(Annotator.external_id.is_(None))).all() == []


def test_a_clip_without_audio_is_a_404_and_its_trial_can_be_skipped(silent_study):
    data_root, engine = silent_study
    with session_scope(engine) as session:  # links made anyway, as stored data may hold them
        [token] = create_annotators(session, get_study(session, "silent"), 1)
    with client_for(engine, data_root) as client:
        state = client.get("/api/annotate/next", params={"token": token}).json()
        assert state["status"] == "trial"
        trial = state["trial"]
        response = client.get(trial["audio"]["A"], params={"token": token})
        assert response.status_code == 404
        assert response.json() == {"error": "clip A of this trial cannot be played: its audio file is missing on "
                                            "the server. Skip this trial; it will be reported."}
        skipped = client.post("/api/annotate/skip", json={"token": token, "trial": trial["id"],
                                                          "reason": "clip A could not be loaded (404)"})
        assert skipped.status_code == 200 and skipped.json() == {"skipped": True}
        # skipping it again, or another's trial, is refused
        again = client.post("/api/annotate/skip", json={"token": token, "trial": trial["id"], "reason": "x"})
        assert again.status_code == 403
        assert client.post("/api/annotate/skip", json={"token": token, "trial": trial["id"]}).status_code == 400
        after = client.get("/api/annotate/next", params={"token": token}).json()
    assert after["status"] == "trial" and after["progress"]["done"] == 0  # a skipped trial is not counted
    with session_scope(engine) as session:
        [report] = session.exec(select(SkippedTrial)).all()
        assert report.reason == "clip A could not be loaded (404)"
        [held] = session.exec(select(Assignment).where(Assignment.annotator_id == report.annotator_id)).all()
        # the next trial is another pair; the skipped one's claim is gone (its slot is free again)
        assert held.id == after["trial"]["id"] and held.clip_pair_id != report.clip_pair_id
    # reported to the researcher in the study overview
    assert "⚠ 1 trial(s) skipped by annotators because a clip would not play (table skipped_trial: annotator, " \
        "pair, reason)." in annotation_notes(engine, "silent", data_root)


def test_a_clip_whose_file_was_deleted_is_a_404_not_a_server_error(root, tmp_path):
    data_root, engine = root
    bench = write_small_benchmark(tmp_path / "bench", pairs=1)
    with session_scope(engine) as session:
        register_benchmark(session, bench, "gone", data_root, AssignmentSettings(judgments_per_pair=1),
                           attention_checks=0, practice=0)
        [token] = create_annotators(session, get_study(session, "gone"), 1)
        for clip in session.exec(select(DialogueClip)).all():
            resolve(clip.audio_path, data_root).unlink()
    with client_for(engine, data_root) as client:
        trial = client.get("/api/annotate/next", params={"token": token}).json()["trial"]
        response = client.get(trial["audio"]["B"], params={"token": token})
        assert response.status_code == 404 and response.json()["error"].startswith("clip B of this trial cannot be")
        assert client.post("/api/annotate/skip", json={"token": token, "trial": trial["id"],
                                                       "reason": "clip B: 404"}).status_code == 200
        # its only pair skipped, nothing judged: no work, and no completion code
        assert client.get("/api/annotate/next", params={"token": token}).json() == {
            "status": "no_work", "prolific": False}

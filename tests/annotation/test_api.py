"""The annotator area's JSON API on a real database with real (espeak-ng) clips: the trial flow,
idempotent resubmission, every kind of bad input refused with nothing stored, Prolific arrival,
private audio, export; and simulated annotators working at once (SQLite and PostgreSQL)."""

from __future__ import annotations

import json
import secrets
from datetime import timedelta

import numpy as np
import pandas as pd
import pytest
import soundfile
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlmodel import func, select

from analysis.agreement import human_evaluation_summary
from annotation.api import api_router
from annotation.assignment import AssignmentSettings
from annotation.export import COLUMNS, export_judgments, judgment_rows
from annotation.register import register_benchmark
from annotation.simulate import Behaviour, check_judgments, run_annotators, stored_trials
from annotation.trials import authenticate, create_annotators, get_study
from app import build_app
from storage.db import init_db, make_engine, session_scope
from storage.files import resolve, sha256_file
from storage.models import Annotator, Assignment, ClipPair, DialogueClip, Judgment, Study, utc_now
from tests import command_line
from tests.rendered_speech import alternating_dialogue
from tests.annotation.small_benchmark import write_small_benchmark
from tests.annotation.test_audio_pairs import TEXTS
from tests.browser import serve
from tests.databases import postgres_url, sqlite_url  # noqa: F401  (pytest fixtures: real SQLite and PostgreSQL databases)


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    return write_small_benchmark(tmp_path_factory.mktemp("bench") / "b", pairs=4, controls=1)


@pytest.fixture
def api(tmp_path, bench):
    """(test client, engine, data root) with the small benchmark registered, K=2, 5 trials each."""
    engine = make_engine(f"sqlite:///{tmp_path / 'db.sqlite'}")
    init_db(engine)
    settings = AssignmentSettings(judgments_per_pair=2, trials_per_annotator=5, attention_every=5)
    with session_scope(engine) as session:
        register_benchmark(session, bench, "s", tmp_path / "data", settings, attention_checks=1, practice=1,
                           pause_s=1.0)
    app = FastAPI()
    app.include_router(api_router(engine, tmp_path / "data"))
    with TestClient(app) as client:
        yield client, engine, tmp_path / "data"
    engine.dispose()


def tokens(engine, n, valid_for=None, now=None):
    with session_scope(engine) as session:
        return create_annotators(session, get_study(session, "s"), n, valid_for, now=now)


def start(client, token):
    """Past the practice: the first trial."""
    assert client.get("/api/annotate/next", params={"token": token}).json()["status"] == "practice"
    assert client.post("/api/annotate/practice-done", json={"token": token}).json() == {"ok": True}
    state = client.get("/api/annotate/next", params={"token": token}).json()
    assert state["status"] == "trial"
    return state["trial"]


def answer(token, trial, choice="A", **changes):
    body = {
        "token": token, "trial": trial["id"], "choice": choice, "rating_a": 4, "rating_b": 2,
        "plays_a": 1, "plays_b": 2, "listened_s_a": trial["durations"]["A"], "listened_s_b": 2 * trial["durations"]["B"],
        "response_s": 12.5,
    }
    if trial["ask_artifact"]:
        body.update(artifact_rating_a=1, artifact_rating_b=2)
    body.update(changes)
    return {k: v for k, v in body.items() if v is not None}


def stored_count(engine):
    with session_scope(engine) as session:
        return session.exec(select(func.count()).select_from(Judgment)).one()


def test_a_trial_is_stored_with_everything_and_resubmitting_it_is_idempotent(api):
    client, engine, _ = api
    [token] = tokens(engine, 1)
    trial = start(client, token)
    body = answer(token, trial, choice="B")
    first = client.post("/api/annotate/submit", json=body)
    assert first.status_code == 200 and first.json()["created"] is True
    again = client.post("/api/annotate/submit", json=body)
    assert again.status_code == 200 and again.json() == {**first.json(), "created": False}

    different = client.post("/api/annotate/submit", json={**body, "rating_a": 1})
    assert different.status_code == 409
    assert different.json() == {"error": f"trial {trial['id']} was already answered; the first answer is kept"}

    with session_scope(engine) as session:
        [j] = session.exec(select(Judgment)).all()
        a = session.get(Assignment, trial["id"])
        assert (j.choice, j.rating_a, j.rating_b, j.plays_a, j.plays_b) == ("B", 4, 2, 1, 2)
        assert (j.listened_s_a, j.listened_s_b, j.response_s) == (
            trial["durations"]["A"], 2 * trial["durations"]["B"], 12.5)
        assert j.natural_side == a.natural_side and a.status == "done"
        assert j.presented_at == a.claimed_at and j.submitted_at >= j.presented_at
    # The next fetch moves on to another trial.
    nxt = client.get("/api/annotate/next", params={"token": token}).json()
    assert nxt["trial"]["id"] != trial["id"] and nxt["progress"]["done"] == 1


def test_reloading_returns_the_same_trial_with_the_same_sides(api):
    client, engine, _ = api
    [token] = tokens(engine, 1)
    trial = start(client, token)
    for _ in range(3):
        assert client.get("/api/annotate/next", params={"token": token}).json()["trial"] == trial


def test_audio_is_the_clip_of_that_side_and_only_for_its_annotator(api):
    client, engine, data_root = api
    mine, other = tokens(engine, 2)
    trial = start(client, mine)
    start(client, other)
    with session_scope(engine) as session:
        a = session.get(Assignment, trial["id"])
        pair = session.get(ClipPair, a.clip_pair_id)
        natural = session.get(DialogueClip, pair.natural_clip_id)
        perturbed = session.get(DialogueClip, pair.perturbed_clip_id)
    expected = {"A": natural, "B": perturbed} if a.natural_side == "A" else {"A": perturbed, "B": natural}
    for side in "AB":
        response = client.get(trial["audio"][side], params={"token": mine})
        assert response.status_code == 200 and response.headers["content-type"] == "audio/wav"
        assert response.content == resolve(expected[side].audio_path, data_root).read_bytes()
    refused = client.get(trial["audio"]["A"], params={"token": other})
    assert refused.status_code == 403 and refused.json() == {"error": f"trial {trial['id']} is not assigned to you"}
    assert client.get(f"/api/annotate/audio/{trial['id']}/C", params={"token": mine}).status_code == 400


def test_tampered_and_expired_tokens_are_refused(api):
    client, engine, _ = api
    [token] = tokens(engine, 1)
    trial = start(client, token)
    tampered = token[:-1] + ("A" if token[-1] != "A" else "B")
    for response in (
        client.get("/api/annotate/next", params={"token": tampered}),
        client.post("/api/annotate/submit", json=answer(tampered, trial)),
        client.get(trial["audio"]["A"], params={"token": tampered}),
    ):
        assert response.status_code == 403
        assert response.json() == {"error": "unknown annotator token: the link is mistyped or was changed"}
    missing = client.get("/api/annotate/next")
    assert missing.status_code == 403 and missing.json()["error"].startswith("missing annotator token")

    [old] = tokens(engine, 1, valid_for=timedelta(days=1), now=utc_now() - timedelta(days=2))
    expired = client.get("/api/annotate/next", params={"token": old})
    assert expired.status_code == 403 and expired.json()["error"].startswith("this annotator link expired on ")
    assert stored_count(engine) == 0


def test_a_trial_of_someone_else_is_refused(api):
    client, engine, _ = api
    mine, other = tokens(engine, 2)
    trial = start(client, mine)
    start(client, other)
    response = client.post("/api/annotate/submit", json=answer(other, trial))
    assert response.status_code == 403
    assert response.json() == {
        "error": f"trial {trial['id']} is not assigned to you (it may have expired and gone to someone else)"}
    unknown = client.post("/api/annotate/submit", json=answer(mine, {**trial, "id": 9999}))
    assert unknown.status_code == 403
    assert stored_count(engine) == 0


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"rating_a": 6}, "rating_a must be between 1 and 5, got 6"),
        ({"rating_b": 0}, "rating_b must be between 1 and 5, got 0"),
        ({"rating_a": "4"}, "rating_a must be a whole number, got '4'"),
        ({"rating_a": 3.5}, "rating_a must be a whole number, got 3.5"),
        ({"rating_b": None}, "missing field 'rating_b' in the submission"),
        ({"choice": None}, "missing field 'choice' in the submission"),
        ({"choice": "natural"}, "choice must be 'A' or 'B', got 'natural'"),
        ({"colour": "red"}, "unknown field 'colour' in the submission"),
        ({"response_s": -1}, "response_s must be a number of seconds between 0 and 86400, got -1"),
        ({"plays_b": 0, "listened_s_b": 0.0}, "clip B was not played to the end before answering (heard 0.0 s of"),
        ({"listened_s_a": 0.5}, "clip A was not played to the end before answering (heard 0.5 s of"),
        ({"artifact_rating_a": 2, "artifact_rating_b": 2},
         "artifact ratings belong to artifact-control trials only; this trial has none"),
    ],
)
def test_malformed_submissions_are_refused_and_nothing_is_stored(api, changes, message):
    client, engine, _ = api
    [token] = tokens(engine, 1)
    trial = start(client, token)
    while trial["ask_artifact"]:  # these cases need an ordinary trial: answer the control first
        client.post("/api/annotate/submit", json=answer(token, trial)).raise_for_status()
        trial = client.get("/api/annotate/next", params={"token": token}).json()["trial"]
    before = stored_count(engine)
    response = client.post("/api/annotate/submit", json=answer(token, trial, **changes))
    assert response.status_code == 400
    assert response.json()["error"].startswith(message)
    assert stored_count(engine) == before
    with session_scope(engine) as session:
        assert session.get(Assignment, trial["id"]).status == "claimed"


def test_artifact_control_trials_need_both_artifact_ratings(api):
    client, engine, _ = api
    [token] = tokens(engine, 1)
    trial = start(client, token)
    while not trial["ask_artifact"]:
        client.post("/api/annotate/submit", json=answer(token, trial)).raise_for_status()
        trial = client.get("/api/annotate/next", params={"token": token}).json()["trial"]
    before = stored_count(engine)
    response = client.post("/api/annotate/submit", json=answer(token, trial, artifact_rating_b=None))
    assert response.status_code == 400
    assert response.json()["error"] == (
        "this trial asks for an artifact rating of both clips (artifact_rating_a, artifact_rating_b)")
    assert stored_count(engine) == before
    assert client.post("/api/annotate/submit", json=answer(token, trial)).status_code == 200
    with session_scope(engine) as session:
        j = session.exec(select(Judgment).order_by(Judgment.id.desc())).first()
        assert (j.artifact_rating_a, j.artifact_rating_b) == (1, 2)


def test_a_body_that_is_not_json_is_refused(api):
    client, _, _ = api
    response = client.post("/api/annotate/submit", content=b"choice=A", headers={"content-type": "application/json"})
    assert response.status_code == 400 and response.json() == {"error": "the request body is not JSON"}


def test_prolific_arrival_creates_one_annotator_and_resumes(api):
    client, engine, _ = api
    ids = {"study": "s", "PROLIFIC_PID": "5f1a2b3c4d5e6f7a8b9c0d1e", "STUDY_ID": "S123", "SESSION_ID": "X1"}
    refused = client.post("/api/annotate/prolific", json=ids)  # no STUDY_ID configured: nobody gets in
    assert refused.status_code == 403 and refused.json() == {
        "error": "study 's' takes no Prolific arrivals (no Prolific STUDY_ID is configured)"}
    with session_scope(engine) as session:
        study = get_study(session, "s")
        study.config = {**study.config, "annotation": {**study.config["annotation"], "prolific_study_id": "S123"}}
        session.add(study)
    first = client.post("/api/annotate/prolific", json=ids).json()["token"]
    trial = start(client, first)
    client.post("/api/annotate/submit", json=answer(first, trial)).raise_for_status()
    second = client.post("/api/annotate/prolific", json={**ids, "SESSION_ID": "X2"}).json()["token"]
    # The old token stops working; the new one continues the same annotator.
    assert client.get("/api/annotate/next", params={"token": first}).status_code == 403
    state = client.get("/api/annotate/next", params={"token": second}).json()
    assert state["status"] == "trial" and state["progress"]["done"] == 1
    with session_scope(engine) as session:
        [annotator] = session.exec(select(Annotator)).all()
        assert (annotator.external_id, annotator.prolific_study_id, annotator.prolific_session_id) == (
            ids["PROLIFIC_PID"], "S123", "X2")

    bad = client.post("/api/annotate/prolific", json={**ids, "PROLIFIC_PID": "<script>"})
    assert bad.status_code == 400 and bad.json()["error"].startswith("PROLIFIC_PID is missing or not a Prolific id")
    nostudy = client.post("/api/annotate/prolific", json={**ids, "study": "other"})
    assert nostudy.status_code == 404 and nostudy.json() == {"error": "no study named 'other'"}
    with session_scope(engine) as session:
        study = get_study(session, "s")
        study.config = {**study.config, "annotation": {**study.config["annotation"], "prolific_study_id": "S999"}}
        session.add(study)
    wrong = client.post("/api/annotate/prolific", json=ids)
    assert wrong.status_code == 403 and wrong.json() == {"error": "STUDY_ID S123 does not belong to study 's'"}


def test_completion_code_and_export_in_the_columns_agreement_reads(api, tmp_path):
    client, engine, _ = api
    token_list = tokens(engine, 2)
    for n, token in enumerate(token_list):
        trial = start(client, token)
        while True:
            # Annotator 0 always picks the natural clip, annotator 1 the perturbed one.
            with session_scope(engine) as session:
                natural = session.get(Assignment, trial["id"]).natural_side
            choice = natural if n == 0 else ("B" if natural == "A" else "A")
            client.post("/api/annotate/submit", json=answer(token, trial, choice=choice)).raise_for_status()
            state = client.get("/api/annotate/next", params={"token": token}).json()
            if state["status"] != "trial":
                break
            trial = state["trial"]
        assert state["status"] == "complete" and len(state["completion_code"]) == 8
        # 4 pairs + 1 control + 1 attention check; K=2 with 2 annotators: each does all 6.
        progress = state["progress"]
        assert (progress["done"], progress["total"]) == (6, 6)
        # how long a trial takes: both clips (their median length) and the answer; the clips'
        # lengths as a range of whole seconds that holds every clip of the study
        with session_scope(engine) as session:
            lengths = sorted(session.exec(select(DialogueClip.duration_s)).all())
        shortest, longest = progress["clip_range_s"]
        assert shortest <= lengths[0] < shortest + 1 and longest - 1 < lengths[-1] <= longest
        assert progress["trial_s"] == round(2 * lengths[len(lengths) // 2] + 15)
        again = client.get("/api/annotate/next", params={"token": token}).json()
        assert again["completion_code"] == state["completion_code"]

    with session_scope(engine) as session:
        study = get_study(session, "s")
        frame = judgment_rows(session, study)
        assert export_judgments(session, study, tmp_path / "j.csv") == 12
        assert export_judgments(session, study, tmp_path / "j.parquet") == 12
    assert list(frame.columns) == COLUMNS
    assert sorted(frame["trial"].value_counts().items()) == [("artifact_control", 2), ("attention", 2), ("formal", 8)]
    first = frame[frame["annotator"] == frame["annotator"].min()]
    assert set(first["choice"]) == {"natural"} and set(frame[frame["annotator"] != first["annotator"].iloc[0]]["choice"]) == {"perturbed"}
    assert list(frame[frame["trial"] == "attention"]["attention_passed"]) == [True, False] or \
        list(frame[frame["trial"] == "attention"]["attention_passed"]) == [False, True]
    # rating_a was 4 and rating_b 2 in every answer: natural/perturbed follow the recorded sides.
    expected_natural = frame["natural_side"].map({"A": 4.0, "B": 2.0})
    assert (frame["rating_natural"] == expected_natural).all()
    controls = frame[frame["trial"] == "artifact_control"]
    assert set(controls["type"]) == {"late_response"}
    assert (controls["artifact_natural"] == controls["natural_side"].map({"A": 1.0, "B": 2.0})).all()
    assert frame[frame["trial"] == "formal"]["artifact_natural"].isna().all()
    pd.testing.assert_frame_equal(
        pd.read_parquet(tmp_path / "j.parquet")[COLUMNS[:11]].reset_index(drop=True),
        frame[COLUMNS[:11]].reset_index(drop=True), check_dtype=False,
    )
    assert len(pd.read_csv(tmp_path / "j.csv")) == 12
    summary = human_evaluation_summary(frame)
    assert summary["judgments"] == 8 and summary["natural_preference"]["rate"] == 0.5
    assert summary["artifact"]["trials"] == 2


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_annotators_working_at_once_give_every_pair_exactly_k_judgments(request, backend, tmp_path):
    """10 simulated annotators through HTTP on a served app, 20 pairs + 2 controls, K=3: some
    resubmit, two walk away from their first trial (the claims expire after 8 s and go to others;
    at 3 s a loaded CI machine let a working annotator's claim expire and go to another too)."""
    url = request.getfixturevalue(f"{backend}_url")
    bench = write_small_benchmark(tmp_path / "bench", pairs=20, controls=2)
    app = build_app(database_url=url, data_root=tmp_path / "data", researcher_password=secrets.token_urlsafe(12))
    engine = app.state.engine
    settings = AssignmentSettings(judgments_per_pair=3, trials_per_annotator=10, attention_every=5,
                                  claim_timeout_s=8.0)
    with session_scope(engine) as session:
        register_benchmark(session, bench, "s", tmp_path / "data", settings, attention_checks=2, practice=1)
        token_list = create_annotators(session, get_study(session, "s"), 10)
    with serve(app) as base_url:
        behaviours = [Behaviour(abandon=1.0)] * 2 + [Behaviour(resubmit=0.2)] * 6
        first = run_annotators(base_url, token_list[:8], behaviours, seed=1)
        # Whoever walked away left claims behind; two late annotators finish the rest.
        late = run_annotators(base_url, token_list[8:], Behaviour(), seed=2)
    assert first.errors == [] and late.errors == []
    assert first.abandoned == 2 and first.resubmits > 0
    with session_scope(engine) as session:
        check = check_judgments(session, "s", k=3)
        acknowledged = {trial for _, trial in first.stored | late.stored}
        assert stored_trials(session) == acknowledged  # nothing lost, nothing unacknowledged
    assert check == {
        "pairs": 22, "judgments": 66, "per_pair_min": 3, "per_pair_max": 3, "pairs_with_exactly_k": 22,
        "duplicates": 0, "done_assignments": 66, "judgments_without_done_assignment": 0,
    }
    engine.dispose()


def run_cli(*args):
    """`python -m annotation` as its `main(argv)` in this process (an interpreter start with its
    imports costs seconds a call); the build below runs as the real process."""
    return command_line.run_cli("annotation", *args)


def test_cli_builds_registers_makes_links_and_exports(tmp_path):
    (tmp_path / "src").mkdir()
    alternating_dialogue(TEXTS, gap=0.5).write(tmp_path / "src" / "talk.wav")
    url, data = f"sqlite:///{tmp_path / 'db.sqlite'}", tmp_path / "data"
    common = ["--database-url", url, "--data-root", str(data)]
    built = command_line.run_cli_process("annotation", "build-pairs", str(tmp_path / "src"), "--out", str(tmp_path / "out"), "--per-type", "2",
                    "--seed", "1", "--types", "late_response", "--study", "cli", "--k", "2", "--attention", "1",
                    "--practice", "1", "--pause", "4.0", *common)
    assert built.returncode == 0, built.stderr
    assert built.stdout.splitlines()[-1] == (
        "study 'cli': 2 pairs, 2 artifact controls, 1 attention checks, 1 practice pairs (6 new); K=2")
    # Again: nothing new.
    again = run_cli("register", str(tmp_path / "out"), "--study", "cli", "--k", "2", *common)
    assert again.returncode == 0 and "(0 new)" in again.stdout

    engine = make_engine(url)
    manifest = [json.loads(line) for line in (tmp_path / "out" / "manifest.jsonl").read_text().splitlines()]
    with session_scope(engine) as session:
        study = get_study(session, "cli")
        assert study.config["annotation"]["judgments_per_pair"] == 2
        pairs = {p.pair_id: p for p in session.exec(select(ClipPair)).all()}
        for entry in manifest:
            pair = pairs[entry["pair_id"]]
            assert pair.perturbation == "late_response" and pair.edit["details"] == entry["details"]
            for side, clip_id in (("natural", pair.natural_clip_id), ("perturbed", pair.perturbed_clip_id)):
                clip = session.get(DialogueClip, clip_id)
                stored = resolve(clip.audio_path, data)
                # A copy under the data root, with the checksum of the built clip.
                assert clip.audio_sha256 == sha256_file(stored) == sha256_file(tmp_path / "out" / entry[side])
                assert clip.duration_s == pytest.approx(soundfile.info(str(stored)).duration)
        [attention] = [p for p in pairs.values() if p.is_attention_check]
        natural = session.get(DialogueClip, attention.natural_clip_id)
        obvious = session.get(DialogueClip, attention.perturbed_clip_id)
    # The attention pair's perturbed clip is the natural one with 4 s of silence at the longest pause;
    # its natural clip has the 4 s at the very end, so that both are equally long.
    a, rate = soundfile.read(str(resolve(natural.audio_path, data)), dtype="int16", always_2d=True)
    b, _ = soundfile.read(str(resolve(obvious.audio_path, data)), dtype="int16", always_2d=True)
    at = int(round(attention.edit["at_s"] * rate))
    assert len(b) == len(a)
    a = a[:-4 * rate]
    assert np.array_equal(b[:at], a[:at]) and np.array_equal(b[at + 4 * rate:], a[at:])
    assert not b[at:at + 4 * rate].any()

    links = run_cli("annotators", "--study", "cli", "--count", "2", "--valid-days", "1",
                    "--base-url", "https://study.example/", *common)
    assert links.returncode == 0
    lines = links.stdout.splitlines()
    assert len(lines) == 2 and all(line.startswith("https://study.example/annotate/session?token=") for line in lines)
    with session_scope(engine) as session:
        annotator = authenticate(session, lines[0].split("token=")[1])
        assert annotator.expires_at is not None
    exported = run_cli("export", "--study", "cli", "--out", str(tmp_path / "j.csv"), *common)
    assert exported.returncode == 0 and exported.stdout.strip() == f"wrote 0 judgments to {tmp_path / 'j.csv'}"
    assert (tmp_path / "j.csv").read_text().splitlines() == [",".join(COLUMNS)]
    engine.dispose()

    # Voice-activity-only benchmarks cannot be listened to: one line, nothing registered.
    (tmp_path / "va").mkdir()
    (tmp_path / "va" / "manifest.jsonl").write_text(json.dumps(
        {"pair_id": "p1", "type": "late_response", "natural": "clips/p1.natural.json",
         "perturbed": "clips/p1.perturbed.json"}) + "\n")
    refused = run_cli("register", str(tmp_path / "va"), "--study", "va", *common)
    assert refused.returncode == 2
    assert refused.stderr == ("error: pair p1 has no audio (natural is clips/p1.natural.json): annotators need "
                              "WAV clips, so build the benchmark from two-channel recordings\n")
    for args, message in [
        (("export", "--study", "nope", "--out", str(tmp_path / "x.csv")), "error: no study named 'nope'\n"),
        (("export", "--study", "cli", "--out", str(tmp_path / "x.xlsx")),
         "error: export file x.xlsx must end in .csv or .parquet\n"),
        (("annotators", "--study", "cli", "--count", "0"), "error: annotator count must be at least 1, got 0\n"),
    ]:
        result = run_cli(*args, *common)
        assert (result.returncode, result.stderr) == (2, message)

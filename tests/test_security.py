"""The app probed as an outsider: the real app on a free localhost port (SQLite, then
PostgreSQL), driven over HTTP with httpx. Each test names the attack it shows is refused."""

from __future__ import annotations

import io
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import httpx
import numpy as np
import pytest
import soundfile
from sqlmodel import func, select

from annotation.assignment import AssignmentSettings
from annotation.register import register_benchmark
from annotation.trials import create_annotators, get_study
from app import build_app
from storage.db import session_scope
from storage.demo import DEMO_STUDY
from storage.models import (
    Annotator,
    Assignment,
    ClipPair,
    ConversationSession,
    DialogueClip,
    DialogueSystem,
    Participant,
)
from storage.records import get_participant, start_session
from tests import command_line
from tests.annotation.small_benchmark import write_small_benchmark
from tests.browser import serve
from tests.databases import _create_database, _database_url, _drop_database
from tests.waiting import wait_until
from webguard.login_throttle import (
    MAX_PER_CLIENT,
    MAX_PER_USER,
    RecentFailures,
    ThrottleLimits,
    retry_after,
)

ROOT = Path(__file__).resolve().parents[1]
PASSWORD = "researcher-password-for-tests"


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def served(request, tmp_path_factory):
    """(app, base URL, data root) of the whole app on SQLite, then on PostgreSQL."""
    data_root = tmp_path_factory.mktemp(f"data-{request.param}")
    if request.param == "sqlite":
        url, cleanup = f"sqlite:///{data_root / 'app.db'}", lambda: None
    else:
        server = request.getfixturevalue("postgres_server_url")
        name = _create_database(server)
        url, cleanup = _database_url(server, name), lambda: _drop_database(server, name)
    app = build_app(database_url=url, data_root=data_root, researcher_password=PASSWORD)
    try:
        with serve(app) as base_url:
            yield app, base_url, data_root
    finally:
        app.state.engine.dispose()
        cleanup()


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    return write_small_benchmark(tmp_path_factory.mktemp("bench") / "b", pairs=4, controls=1)


def annotation_study(served, bench, name: str, settings: AssignmentSettings, **options) -> None:
    app, _, data_root = served
    with session_scope(app.state.engine) as session:
        register_benchmark(session, bench, name, data_root, settings, attention_checks=1, practice=1, pause_s=1.0,
                           study_options=options or None)


def annotator_token(served, study: str) -> str:
    with session_scope(served[0].state.engine) as session:
        [token] = create_annotators(session, get_study(session, study), 1)
    return token


@pytest.fixture
def client(served):
    with httpx.Client(base_url=served[1], timeout=30) as c:
        yield c


def consent(client, external_id=None) -> dict:
    response = client.post(f"/participate/api/{DEMO_STUDY}/consent", json={"external_id": external_id})
    assert response.status_code == 200, response.text
    return response.json()


def running_session(engine, pseudonym: str) -> int:
    """A session row as /offer stores it when a call starts (the call itself needs WebRTC)."""
    with session_scope(engine) as session:
        participant = get_participant(session, pseudonym)
        system = session.exec(select(DialogueSystem).where(DialogueSystem.study_id == participant.study_id)).first()
        return start_session(session, participant, system, "a topic").id


# 1. Anyone could end or overwrite another participant's call.


def test_participant_actions_need_the_secret_given_at_consent(served, client):
    app, _, _ = served
    info = consent(client)
    assert isinstance(info["secret"], str) and len(info["secret"]) >= 32
    session_id = running_session(app.state.engine, info["participant"])
    for headers in ({}, {"X-Participant-Secret": "wrong"}, {"X-Participant-Secret": consent(client)["secret"]}):
        end = client.post(f"/participate/api/end/{session_id}", json={}, headers=headers)
        assert end.status_code == 403, end.text
        upload = client.post(f"/participate/api/listener/{session_id}", content=b"RIFF....", headers=headers)
        assert upload.status_code == 403, upload.text
        offer = client.post("/participate/api/offer", headers=headers, json={
            "participant": info["participant"], "system": "x", "topic": "y", "sdp": "v=0", "type": "offer"})
        assert offer.status_code == 403, offer.text
    with session_scope(app.state.engine) as session:
        assert session.get(ConversationSession, session_id).status == "active"
    # its own secret is accepted (ending a session that runs in no process of this server is a no-op)
    own = client.post(f"/participate/api/end/{session_id}", json={}, headers={"X-Participant-Secret": info["secret"]})
    assert own.status_code == 200
    for session_id in (0, 2**31, 2**70):
        assert client.post(f"/participate/api/end/{session_id}", json={}).status_code == 403


def test_a_listener_recording_is_never_overwritten_and_oversized_uploads_stop_early(served, client):
    app, _, data_root = served
    info = consent(client)
    session_id = running_session(app.state.engine, info["participant"])
    headers = {"X-Participant-Secret": info["secret"]}
    # the call's two-channel recording, as the recorder leaves it, and a page upload of what was heard
    tone = (np.sin(np.arange(32000) * 0.05) * 0.3).astype(np.float32)
    call_wav = Path(data_root) / f"sessions/{session_id}/call.wav"
    call_wav.parent.mkdir(parents=True)
    soundfile.write(str(call_wav), np.stack([tone, tone], axis=1), 16000, subtype="PCM_16")
    heard = io.BytesIO()
    soundfile.write(heard, np.stack([tone, tone], axis=1), 16000, format="WAV", subtype="PCM_16")

    def chunks(n):
        for _ in range(n):
            yield b"\0" * (1 << 20)

    too_big = client.post(f"/participate/api/listener/{session_id}", content=chunks(65), headers=headers)
    assert too_big.status_code == 413
    first = client.post(f"/participate/api/listener/{session_id}", content=heard.getvalue(), headers=headers)
    assert first.status_code == 200, first.text
    stored = (Path(data_root) / f"sessions/{session_id}/listener.wav").read_bytes()
    second = client.post(f"/participate/api/listener/{session_id}", content=heard.getvalue()[:-3200], headers=headers)
    assert second.status_code == 409
    assert (Path(data_root) / f"sessions/{session_id}/listener.wav").read_bytes() == stored


# 8. Smaller: malformed external ids.


@pytest.mark.parametrize("external_id, message", [
    ({"a": 1}, "external_id must be a string"),
    (["x"], "external_id must be a string"),
    ("a\0b", "external_id contains control characters"),
    ("x" * (1 << 20), "the request body is larger than 65536 bytes"),
    ("x" * 201, "external_id is longer than 200 characters"),
])
def test_malformed_external_ids_are_refused_and_nothing_is_stored(served, client, external_id, message):
    app, _, _ = served
    with session_scope(app.state.engine) as session:
        before = session.exec(select(func.count()).select_from(Participant)).one()
    response = client.post(f"/participate/api/{DEMO_STUDY}/consent", json={"external_id": external_id})
    assert 400 <= response.status_code < 500 and response.json() == {"error": message}
    with session_scope(app.state.engine) as session:
        assert session.exec(select(func.count()).select_from(Participant)).one() == before


def test_nul_bytes_in_names_are_not_found_not_server_errors(client):
    assert client.get("/participate/api/participant/a%00b").status_code == 404
    assert client.post("/participate/api/a%00b/consent", json={}).status_code == 404
    assert client.get("/participate/study/a%00b").status_code == 404


# 3. Researcher files were served without login through the public areas.


def log_in(client) -> None:
    response = client.post("/analyze/login", data={"username": "researcher", "password": PASSWORD})
    assert response.status_code == 200, response.text


def test_researcher_files_are_not_served_by_the_public_areas(served):
    base_url = served[1]
    secret_bytes = b"participant recording " * 100
    with httpx.Client(base_url=base_url, timeout=30) as researcher:
        log_in(researcher)
        uploaded = researcher.post("/analyze/gradio_api/upload", files={"files": ("rec.wav", secret_bytes)})
        assert uploaded.status_code == 200, uploaded.text
        [path] = uploaded.json()
        assert researcher.get(f"/analyze/gradio_api/file={path}").content == secret_bytes
    with httpx.Client(base_url=base_url, timeout=30) as stranger:
        assert stranger.get(f"/analyze/gradio_api/file={path}").status_code in (401, 403)
        for area in ("annotate", "participate"):
            for route in (f"/{area}/gradio_api/file={path}", f"/{area}/gradio_api/file/{path}",
                          f"/{area}/gradio_api/file%3D{path}", f"/{area}//gradio_api/file={path}"):
                response = stranger.get(route)
                assert response.status_code == 404 and secret_bytes not in response.content, route
            # anonymous uploads to the public areas are refused too
            upload = stranger.post(f"/{area}/gradio_api/upload", files={"files": ("big.bin", b"x" * 1000)})
            assert upload.status_code == 404
        # the public pages themselves still work
        assert stranger.get("/annotate/").status_code == 200 and stranger.get("/participate/").status_code == 200


# 4. The Prolific route created annotators for anyone, and claims were renewed forever.


def test_prolific_arrivals_need_the_configured_study_id(served, bench, client):
    arrival = {"PROLIFIC_PID": "5f1a2b3c4d5e6f7a8b9c0d1e", "STUDY_ID": "S123", "SESSION_ID": "X1"}
    annotation_study(served, bench, "open", AssignmentSettings(judgments_per_pair=1))
    refused = client.post("/api/annotate/prolific", json={"study": "open", **arrival})
    assert refused.status_code == 403 and "no Prolific STUDY_ID is configured" in refused.json()["error"]
    annotation_study(served, bench, "on-prolific", AssignmentSettings(judgments_per_pair=1), prolific_study_id="S123")
    assert client.post("/api/annotate/prolific", json={"study": "on-prolific", **arrival, "STUDY_ID": "S9"}).status_code == 403
    assert client.post("/api/annotate/prolific", json={"study": "on-prolific", **arrival}).status_code == 200
    with session_scope(served[0].state.engine) as session:
        studies = {get_study(session, n).id: n for n in ("open", "on-prolific")}
        made = session.exec(select(Annotator).where(Annotator.external_id == arrival["PROLIFIC_PID"])).all()
        assert [studies[a.study_id] for a in made] == ["on-prolific"]


def test_a_claim_is_not_renewed_past_its_maximum_lifetime(served, bench, client):
    # claim_max_s as the study's config holds it (as `annotation register` writes it)
    annotation_study(served, bench, "claims", AssignmentSettings(judgments_per_pair=1, claim_timeout_s=1.0),
                     claim_max_s=2.0)
    token = annotator_token(served, "claims")
    assert client.get("/api/annotate/next", params={"token": token}).json()["status"] == "practice"
    client.post("/api/annotate/practice-done", json={"token": token}).raise_for_status()
    first = client.get("/api/annotate/next", params={"token": token}).json()["trial"]["id"]
    hard_end = timedelta(seconds=2.0)

    def renewed_to_its_maximum() -> Assignment | None:
        client.get("/api/annotate/next", params={"token": token}).raise_for_status()  # an annotator polling /next
        with session_scope(served[0].state.engine) as session:
            claim = session.get(Assignment, first)
        assert claim is not None and claim.status == "claimed", "the claim expired before a renewal reached its end"
        return claim if claim.expires_at >= claim.claimed_at + hard_end else None

    # The first renewal that reaches the maximum is the one that would go past it without the cap.
    claim = wait_until(renewed_to_its_maximum, 10, "a renewal reaching the claim's maximum lifetime")
    assert claim.expires_at == claim.claimed_at + hard_end


# 7. Attention checks could be passed without listening: the perturbed clip was 1.0 s longer.


def test_attention_and_practice_clips_have_equally_long_sides(served, bench, client):
    annotation_study(served, bench, "obvious", AssignmentSettings(judgments_per_pair=1))
    token = annotator_token(served, "obvious")
    state = client.get("/api/annotate/next", params={"token": token}).json()
    assert state["status"] == "practice"
    for n, trial in enumerate(state["practice"]):
        assert trial["durations"]["A"] == trial["durations"]["B"]
        lengths = {soundfile.info(io.BytesIO(client.get(f"/api/annotate/practice/{n}/{side}",
                                                       params={"token": token}).content)).frames
                   for side in "AB"}
        assert len(lengths) == 1
    with session_scope(served[0].state.engine) as session:
        study = get_study(session, "obvious")
        checks = session.exec(select(ClipPair).where(ClipPair.study_id == study.id,
                                                     ClipPair.is_attention_check)).all()
        assert checks
        for pair in checks:
            natural, perturbed = (session.get(DialogueClip, i) for i in (pair.natural_clip_id, pair.perturbed_clip_id))
            assert natural.duration_s == perturbed.duration_s


# 6. Submissions accepted absurd values and crashed on huge ones; bodies were read whole.


def started_trial(served, bench, client, study: str) -> tuple[str, dict]:
    annotation_study(served, bench, study, AssignmentSettings(judgments_per_pair=1))
    token = annotator_token(served, study)
    client.get("/api/annotate/next", params={"token": token}).raise_for_status()
    client.post("/api/annotate/practice-done", json={"token": token}).raise_for_status()
    return token, client.get("/api/annotate/next", params={"token": token}).json()["trial"]


@pytest.mark.parametrize("field, value", [
    ("plays_a", 2**70), ("plays_b", 2**63 - 1), ("plays_a", 2**31), ("plays_a", 1001), ("listened_s_a", 1e308),
    ("listened_s_b", 1e300), ("response_s", 1e300), ("response_s", 86401), ("trial", 2**63 - 1), ("trial", 2**70),
    ("rating_a", 2**70),
])
def test_absurd_numbers_in_a_submission_are_refused_and_nothing_is_stored(served, bench, client, field, value):
    token, trial = started_trial(served, bench, client, f"bounds-{field}-{value}"[:60])
    body = {"token": token, "trial": trial["id"], "choice": "A", "rating_a": 4, "rating_b": 2, "plays_a": 1,
            "plays_b": 1, "listened_s_a": trial["durations"]["A"], "listened_s_b": trial["durations"]["B"],
            "response_s": 10.0}
    if trial["ask_artifact"]:
        body.update(artifact_rating_a=1, artifact_rating_b=2)
    response = client.post("/api/annotate/submit", json={**body, field: value})
    assert response.status_code in (400, 403) and "error" in response.json(), response.text
    with session_scope(served[0].state.engine) as session:
        assert session.exec(select(Assignment).where(Assignment.id == trial["id"])).one().status == "claimed"
    assert client.post("/api/annotate/submit", json=body).status_code == 200  # the honest answer is taken


def test_huge_and_deeply_nested_bodies_are_refused_before_they_are_read(client):
    deep = b"[" * 100_000 + b"]" * 100_000
    for route in ("/api/annotate/submit", "/participate/api/demo/consent", "/participate/api/offer"):
        nested = client.post(route, content=b"{\"token\": " + b"[" * 5000 + b"]" * 5000 + b"}",
                             headers={"content-type": "application/json"})
        assert 400 <= nested.status_code < 500, (route, nested.text)
        big = client.post(route, content=deep, headers={"content-type": "application/json"})
        assert big.status_code == 413, (route, big.text)
    # A client that declares a small length, or none, is cut off at the cap while it streams.
    def chunks():
        yield b'{"external_id": "'
        for _ in range(200):
            yield b"x" * 65536
        yield b'"}'
    streamed = client.post("/participate/api/demo/consent", content=chunks(), headers={"content-type": "application/json"})
    assert streamed.status_code == 413
    assert client.get("/api/annotate/audio/{}/A".format(2**70), params={"token": "x"}).status_code == 403
    surrogate = client.post("/api/annotate/submit", content=b'{"token": "\\ud800"}',
                            headers={"content-type": "application/json"})
    assert surrogate.status_code == 403
    assert client.post("/api/annotate/prolific", json={"study": "a\u0000b", "PROLIFIC_PID": "a", "STUDY_ID": "b",
                                                       "SESSION_ID": "c"}).status_code == 404


# 5. Nothing slowed password guessing on /analyze/login. (Last in this file: it locks the login.)


def test_login_guessing_is_throttled_per_client_and_per_user_and_logged(served, caplog):
    base_url = served[1]
    caplog.set_level("WARNING", logger="login_throttle")

    def attempt(password, source="127.0.0.1", user="researcher"):
        transport = httpx.HTTPTransport(local_address=source)
        with httpx.Client(base_url=base_url, transport=transport, timeout=30) as c:
            return c.post("/analyze/login", data={"username": user, "password": password}).status_code

    # Per client: after MAX_PER_CLIENT failures from one address, even the right password waits.
    assert [attempt("guess") for _ in range(MAX_PER_CLIENT)] == [400] * MAX_PER_CLIENT
    assert attempt(PASSWORD) == 429 and attempt("guess", user="someone-else") == 429
    assert attempt(PASSWORD, source="127.0.0.2") == 200  # another address is not held up
    failed = [r for r in caplog.records if r.getMessage().startswith("failed researcher login")]
    assert len(failed) == MAX_PER_CLIENT and "'researcher' from 127.0.0.1" in failed[0].getMessage()
    # Per user: guesses spread over many addresses stop at MAX_PER_USER for the user name.
    sources = [f"127.0.1.{n}" for n in range(1, MAX_PER_USER - MAX_PER_CLIENT + 1)]  # the first 5 count too
    assert [attempt("guess", source=s) for s in sources] == [400] * len(sources)
    assert attempt(PASSWORD, source="127.0.2.1") == 429


def test_the_throttle_counts_failures_kept_in_memory_with_limits_given():
    # The counting the login uses, as another door uses it (the realtime server: one process, no
    # user names, so no limit per name).
    limits = ThrottleLimits(window_s=60, per_client=2, per_user=None)
    failures, start = RecentFailures(), datetime(2025, 1, 1, tzinfo=timezone.utc)
    for k in range(2):
        assert retry_after(failures, "10.0.0.1", "", start + timedelta(seconds=k), limits) == 0
        failures.record("10.0.0.1", "", start + timedelta(seconds=k), start + timedelta(seconds=k - 60))
    assert retry_after(failures, "10.0.0.1", "", start + timedelta(seconds=10), limits) == 50  # the oldest leaves at 60
    assert retry_after(failures, "10.0.0.2", "", start + timedelta(seconds=10), limits) == 0
    assert retry_after(failures, "10.0.0.1", "", start + timedelta(seconds=61), limits) == 0
    # A failure recorded later forgets those that left the window: memory stays bounded.
    failures.record("10.0.0.3", "", start + timedelta(seconds=200), start + timedelta(seconds=140))
    by_client, by_user = failures.recent("10.0.0.1", "", since=start)
    assert by_client == [] and by_user == [start + timedelta(seconds=200)]


# 8. Smaller: command lines answer bad input in one line (no traceback) with a non-zero exit.


def run_cli(*args, cwd=ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def one_line_error(done: subprocess.CompletedProcess, expected: str) -> None:
    assert done.returncode != 0
    assert "Traceback" not in done.stderr and done.stderr.strip().count("\n") == 0, done.stderr
    assert done.stderr.startswith("error: ") and expected in done.stderr, done.stderr


def test_study_files_that_are_not_utf8_and_unsupported_urls_get_one_line_errors(tmp_path):
    bad = tmp_path / "study.yaml"
    bad.write_bytes(b"name: x\ntitle: \xff\xfe\nsystems: [{name: c, kind: cascaded}]\n")
    good = tmp_path / "good.yaml"
    good.write_text("name: x\nsystems: [{name: c, kind: cascaded}]\n")
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    one_line_error(run_cli("studies", "--url", url, "load-config", str(bad)), "is not UTF-8 text")
    # the same code as `main(argv)` in this process (an interpreter start costs seconds)
    one_line_error(command_line.run_cli("studies", "--url", "mysql://u@h/db", "load-config", str(good)),
                   "unsupported database 'mysql'")
    one_line_error(command_line.run_cli("studies", "--url", "not a url", "sweep"), "cannot parse database URL")


@pytest.mark.parametrize("bad_value", [np.nan, np.inf, -np.inf])
def test_analysis_stats_refuses_samples_that_are_not_finite(tmp_path, bad_value):
    audio = np.zeros((16000, 2), dtype=np.float32)
    audio[100, 1] = bad_value
    path = tmp_path / "float.wav"
    soundfile.write(str(path), audio, 16000, subtype="FLOAT")
    one_line_error(command_line.run_cli("analysis", "stats", str(path), "--no-asr"), "not finite numbers (NaN or Inf)")

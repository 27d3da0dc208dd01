"""Every table round-trips through a real SQLite file and a real PostgreSQL database; the
database itself enforces foreign keys, uniqueness and allowed values."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
import sqlalchemy as sa
from sqlmodel import SQLModel, select

from storage.db import session_scope
from storage.models import (
    AnalysisRequest,
    AnalysisResult,
    Annotator,
    Assignment,
    ClipPair,
    ConnectionCheck,
    QuestionnaireResponse,
    AuditEvent,
    ErasureRecord,
    ResearcherAccount,
    ConversationSession,
    DialogueClip,
    DialogueSystem,
    ExaminerExample,
    ExaminerRun,
    Judgment,
    LoginFailure,
    Participant,
    Recording,
    SkippedTrial,
    Study,
)

T0 = datetime(2026, 3, 1, 12, 30, 15, 250000, tzinfo=timezone.utc)
# The same instant written in another zone: must come back as UTC.
T0_PLUS_2H = T0.astimezone(timezone(timedelta(hours=2)))


# One row of every table, in dependency order; each is built from the ids of the rows before it.
ROW_BUILDERS = [
    lambda ids: Study(
        name="s1", title="Study one", config={"topics": ["a", "b"], "session_seconds": 300}, created_at=T0,
        updated_at=T0,
    ),
    lambda ids: DialogueSystem(
        study_id=ids["study"], name="cascaded", kind="cascaded", config={"asr": "tiny.en"}, created_at=T0
    ),
    lambda ids: Participant(study_id=ids["study"], external_id="PROLIFIC123", consent_at=T0_PLUS_2H, created_at=T0,
                            completion_code="CALLS-DONE"),
    lambda ids: ConversationSession(
        participant_id=ids["participant"], system_id=ids["dialogue_system"], topic="learning Python",
        status="complete", started_at=T0, ended_at=T0 + timedelta(seconds=300),
        network={"rtt_ms_p50": 82.5, "loss_to_server": 0.02, "candidate_type": "relay"},
    ),
    lambda ids: Recording(
        session_id=ids["conversation_session"], path="sessions/1/stereo.wav", sha256="ab" * 32, kind="two-channel",
        sample_rate=16000, channels=2, system_channel=1, duration_s=300.125, created_at=T0,
    ),
    lambda ids: DialogueClip(
        study_id=ids["study"], recording_id=ids["recording"], audio_path="clips/c1.wav", audio_sha256="cd" * 32,
        activity={"duration": 20.0, "activity": [[[0.5, 1.25]], [[1.5, 3.0]]]}, start_s=10.0, end_s=30.0,
        duration_s=20.0, created_at=T0,
    ),
    lambda ids: ClipPair(
        study_id=ids["study"], pair_id="p-001", perturbation="gap-shift", natural_clip_id=ids["dialogue_clip"],
        perturbed_clip_id=ids["dialogue_clip"], edit={"shift_s": 0.75, "turn": 3}, is_artifact_control=True,
        is_attention_check=False, is_practice=False, created_at=T0,
    ),
    lambda ids: Annotator(
        study_id=ids["study"], token_hash="ef" * 32, external_id="PROLIFIC456", created_at=T0, completed_at=T0,
        completion_code="C0DE", expires_at=T0 + timedelta(days=7), practice_done_at=T0,
        prolific_study_id="S1", prolific_session_id="X1",
    ),
    lambda ids: Judgment(
        annotator_id=ids["annotator"], clip_pair_id=ids["clip_pair"], natural_side="B", choice="A", rating_a=4.0,
        rating_b=2.5, artifact_rating=1.0, artifact_rating_a=2.0, artifact_rating_b=3.0, plays_a=2, plays_b=1, listened_s_a=31.5, listened_s_b=20.0,
        response_s=45.25, presented_at=T0, submitted_at=T0 + timedelta(seconds=45.25),
    ),
    lambda ids: Assignment(
        clip_pair_id=ids["clip_pair"], annotator_id=ids["annotator"], slot=2, position=1, natural_side="B",
        status="done", claimed_at=T0, expires_at=T0 + timedelta(minutes=15), done_at=T0 + timedelta(seconds=45.25),
    ),
    lambda ids: AnalysisResult(
        study_id=ids["study"], kind="stats", subject="session:1", parameters={"ipu_silence_s": 0.2},
        params_hash="12" * 32, result={"gaps": [0.1, 0.25], "n": 2}, created_at=T0, updated_at=T0,
    ),
    lambda ids: SkippedTrial(
        annotator_id=ids["annotator"], clip_pair_id=ids["clip_pair"], reason="clip A: its audio file is missing",
        created_at=T0,
    ),
    lambda ids: AnalysisRequest(
        study_id=ids["study"], requested_at=T0, started_at=T0, finished_at=None, worker="host:12:3",
        heartbeat_at=T0 + timedelta(seconds=2), stage="judge metrics", stage_started_at=T0, done=40, total=100,
        error=None,
    ),
    lambda ids: LoginFailure(client="203.0.113.7", user_name="researcher", failed_at=T0),
    lambda ids: ConnectionCheck(study_id=ids["study"], external_id="PROLIFIC789", created_at=T0, outcome="failed",
                                reason="no connection", secure_context=True, microphone="ok", candidate_type=None,
                                relay_protocol=None, rtt_ms=None, loss=None, user_agent="Chromium 156"),
    lambda ids: ExaminerRun(system="cascaded", kind="cascaded", config={}, task_set={"seed": 0}, task_set_hash="ab",
                            calls=2, summary={"smooth_tor": 1.0}, scores={"smooth_turn_taking": {"rows": []}},
                            run_dir="runs/cascaded", created_at=T0, updated_at=T0),
    lambda ids: ExaminerExample(examiner_run_id=ids["examiner_run"], task="smooth_turn_taking", example="0", tor=1,
                                latency_s=0.625, timeline={"duration_s": 4.0, "marks": [{"at_s": 1.5, "what": "turn end"}]}),
    lambda ids: QuestionnaireResponse(participant_id=ids["participant"], session_id=ids["conversation_session"],
                                      part=f"call:{ids['conversation_session']}",
                                      answers={"right_time": 4, "comment": "it waited \u2014 too long"},
                                      systems={}, submitted_at=T0),
    lambda ids: ErasureRecord(study_id=ids["study"], subject="participant", row_id=41, salt="5a1t",
                              identifier_hashes=["ab" * 32, "cd" * 32], reason="withdrawn", erased_by="participant",
                              erased_at=T0, counts={"conversation_session": 2, "files": 7, "bytes": 123456}),
    lambda ids: ResearcherAccount(name="ana", role="analyst", study_ids=[ids["study"]], password_hash="$argon2id$x",
                                  created_at=T0, disabled_at=T0 + timedelta(days=30)),
    lambda ids: AuditEvent(at=T0, actor="ana", address="198.51.100.4", action="opened_session", object="session 3",
                           detail={"study": "demo"}),
]


def test_every_table_round_trips(engine):
    ids: dict[str, int] = {}
    written = {}
    for build in ROW_BUILDERS:
        row = build(ids)
        with session_scope(engine) as session:
            session.add(row)
        ids[row.__tablename__] = getattr(row, "id", None)
        written[row.__tablename__] = row.model_dump()
    assert set(written) == set(SQLModel.metadata.tables), "the test must cover every table"

    with session_scope(engine) as session:
        for model in (Study, DialogueSystem, Participant, ConversationSession, Recording, DialogueClip, ClipPair,
                      Annotator, Judgment, AnalysisResult, Assignment, SkippedTrial, AnalysisRequest, LoginFailure,
                      ExaminerRun, ExaminerExample, ConnectionCheck, QuestionnaireResponse, ErasureRecord,
                      ResearcherAccount, AuditEvent):
            read = session.exec(select(model)).one().model_dump()
            assert read == written[model.__tablename__], model.__name__
            for key, value in read.items():
                if isinstance(value, datetime):
                    assert value.utcoffset() == timedelta(0), f"{model.__name__}.{key} is not UTC"
        participant = session.exec(select(Participant)).one()
        assert participant.consent_at == T0 and participant.consent_at.tzinfo == timezone.utc


def test_defaults_timestamps_and_pseudonyms(engine):
    before = datetime.now(timezone.utc)
    with session_scope(engine) as session:
        study = Study(name="s")
        session.add(study)
        session.flush()
        people = [Participant(study_id=study.id) for _ in range(3)]
        session.add_all(people)
    after = datetime.now(timezone.utc)
    with session_scope(engine) as session:
        stored = session.exec(select(Participant)).all()
        assert len({p.pseudonym for p in stored}) == 3
        assert all(len(p.pseudonym) >= 22 for p in stored)  # 128 random bits, URL-safe base64
        study = session.exec(select(Study)).one()
        assert before <= study.created_at <= after and study.config == {}


def test_updated_at_moves_on_update(engine):
    with session_scope(engine) as session:
        session.add(Study(name="s", created_at=T0, updated_at=T0))
    with session_scope(engine) as session:
        study = session.exec(select(Study)).one()
        study.title = "renamed"
    with session_scope(engine) as session:
        study = session.exec(select(Study)).one()
        assert study.created_at == T0 and study.updated_at > T0


def test_naive_datetime_is_refused(engine):
    with pytest.raises(sa.exc.StatementError, match="naive datetime"):
        with session_scope(engine) as session:
            session.add(Study(name="s", created_at=datetime(2026, 1, 1)))


def test_foreign_keys_are_enforced(engine):
    with pytest.raises(sa.exc.IntegrityError):
        with session_scope(engine) as session:
            session.add(DialogueSystem(study_id=12345, name="x", kind="cascaded"))
    with session_scope(engine) as session:
        study = Study(name="s")
        session.add(study)
    with session_scope(engine) as session:
        session.add(Participant(study_id=study.id))
    with pytest.raises(sa.exc.IntegrityError):  # cannot delete a study that still has participants
        with session_scope(engine) as session:
            session.exec(sa.delete(Study).where(Study.id == study.id))
    with session_scope(engine) as session:
        assert session.exec(select(sa.func.count()).select_from(DialogueSystem)).one() == 0
        assert session.exec(select(sa.func.count()).select_from(Study)).one() == 1


def _judged_pair(engine) -> tuple[int, int]:
    with session_scope(engine) as session:
        study = Study(name="s")
        session.add(study)
        session.flush()
        clip = DialogueClip(study_id=study.id, start_s=0.0, end_s=10.0, duration_s=10.0)
        annotator = Annotator(study_id=study.id, token_hash="t1")
        session.add_all([clip, annotator])
        session.flush()
        pair = ClipPair(study_id=study.id, pair_id="p1", perturbation="none", natural_clip_id=clip.id,
                        perturbed_clip_id=clip.id)
        session.add(pair)
        session.flush()
        session.add(Judgment(annotator_id=annotator.id, clip_pair_id=pair.id, natural_side="A", choice="A"))
    return annotator.id, pair.id


def test_duplicate_judgment_is_rejected_by_the_database(engine):
    annotator_id, pair_id = _judged_pair(engine)
    with pytest.raises(sa.exc.IntegrityError, match="(?i)unique"):
        with session_scope(engine) as session:
            session.add(Judgment(annotator_id=annotator_id, clip_pair_id=pair_id, natural_side="B", choice="B"))
    with session_scope(engine) as session:
        only = session.exec(select(Judgment)).one()
        assert (only.natural_side, only.choice) == ("A", "A")


def test_a_pair_is_skipped_once_per_annotator(engine):
    annotator_id, pair_id = _judged_pair(engine)
    with session_scope(engine) as session:
        session.add(SkippedTrial(annotator_id=annotator_id, clip_pair_id=pair_id, reason="clip A: 404"))
    with pytest.raises(sa.exc.IntegrityError, match="(?i)unique"):
        with session_scope(engine) as session:
            session.add(SkippedTrial(annotator_id=annotator_id, clip_pair_id=pair_id, reason="again"))


@pytest.mark.parametrize(
    "make_row",
    [
        lambda ids: Study(name="s"),  # study name is unique
        lambda ids: DialogueSystem(study_id=ids["study"], name="sys", kind="other"),  # (study, name)
        lambda ids: Participant(study_id=ids["study"], external_id="PID"),  # (study, external id)
        lambda ids: ClipPair(study_id=ids["study"], pair_id="p1", perturbation="x", natural_clip_id=ids["clip"],
                             perturbed_clip_id=ids["clip"]),  # (study, pair id)
        lambda ids: Annotator(study_id=ids["study"], token_hash="t1"),  # token hash
        lambda ids: Recording(path="r.wav", sha256="0", kind="listener", sample_rate=16000, channels=1,
                              duration_s=1.0),  # path
    ],
    ids=["study", "system", "participant", "pair", "annotator", "recording"],
)
def test_unique_keys(engine, make_row):
    with session_scope(engine) as session:
        study = Study(name="s")
        session.add(study)
        session.flush()
        clip = DialogueClip(study_id=study.id, start_s=0.0, end_s=1.0, duration_s=1.0)
        session.add(clip)
        session.flush()
        ids = {"study": study.id, "clip": clip.id}
        session.add_all([
            DialogueSystem(study_id=study.id, name="sys", kind="cascaded"),
            Participant(study_id=study.id, external_id="PID"),
            ClipPair(study_id=study.id, pair_id="p1", perturbation="x", natural_clip_id=clip.id,
                     perturbed_clip_id=clip.id),
            Annotator(study_id=study.id, token_hash="t1"),
            Recording(path="r.wav", sha256="0", kind="listener", sample_rate=16000, channels=1, duration_s=1.0),
        ])
    with pytest.raises(sa.exc.IntegrityError):
        with session_scope(engine) as session:
            session.add(make_row(ids))


def test_check_constraints(engine):
    _, pair_id = _judged_pair(engine)
    with session_scope(engine) as session:
        other = Annotator(study_id=session.exec(select(Study)).one().id, token_hash="t2")
        session.add(other)
    with pytest.raises(sa.exc.IntegrityError, match="ck_judgment_natural_side"):
        with session_scope(engine) as session:
            session.add(Judgment(annotator_id=other.id, clip_pair_id=pair_id, natural_side="C", choice="A"))
    with pytest.raises(sa.exc.IntegrityError, match="ck_conversation_session_status"):
        with session_scope(engine) as session:
            study = session.exec(select(Study)).one()
            system = DialogueSystem(study_id=study.id, name="x", kind="cascaded")
            participant = Participant(study_id=study.id)
            session.add_all([system, participant])
            session.flush()
            session.add(ConversationSession(participant_id=participant.id, system_id=system.id, topic="t",
                                            status="paused"))

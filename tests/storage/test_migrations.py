"""Migrations: head equals the SQLModel schema exactly, and older databases keep their rows."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from alembic.script import ScriptDirectory
from sqlmodel import SQLModel, select

from storage.db import (
    DatabaseError,
    alembic_config,
    current_revision,
    downgrade,
    head_revision,
    init_db,
    make_engine,
    schema_differences,
    session_scope,
    upgrade,
)
from storage.models import ClipPair, ConversationSession, DialogueSystem, Judgment, Participant, Recording, Study
from storage.records import save_analysis_result

ALL_TABLES = {
    "study", "dialogue_system", "participant", "conversation_session", "recording",
    "dialogue_clip", "clip_pair", "annotator", "judgment", "analysis_result", "assignment", "skipped_trial",
    "analysis_request",
    "login_failure",
    "examiner_run", "examiner_example",
    "connection_check",
    "questionnaire_response",
    "erasure_record",
    "researcher_account", "audit_event",
}


def _tables(engine) -> set[str]:
    return set(sa.inspect(engine).get_table_names()) - {"alembic_version"}


@pytest.fixture
def empty_engine(db_url):
    engine = make_engine(db_url)
    yield engine
    engine.dispose()


def test_history_is_linear_in_fifteen_steps():
    script = ScriptDirectory.from_config(alembic_config())
    revisions = [r.revision for r in script.walk_revisions("base", "heads")]
    assert revisions == ["0015", "0014", "0013", "0012", "0011", "0010", "0009", "0008", "0007", "0006", "0005", "0004", "0003", "0002", "0001"]
    assert head_revision() == "0015"


def test_fresh_database_at_head_has_exactly_the_model_schema(empty_engine):
    assert current_revision(empty_engine) is None
    init_db(empty_engine)
    assert current_revision(empty_engine) == "0015"
    assert _tables(empty_engine) == ALL_TABLES == set(SQLModel.metadata.tables)
    assert schema_differences(empty_engine) == []
    init_db(empty_engine)  # again: nothing to do
    assert current_revision(empty_engine) == "0015"


def test_comparison_sees_a_missing_step(empty_engine):
    # The check above is only worth something if it notices differences.
    upgrade(empty_engine, "0003")
    differences = schema_differences(empty_engine)
    tables = [d for d in differences if d[0] in ("add_table", "add_index")]
    assert sorted((d[0], d[1].name) for d in tables) == [
        ("add_index", "ix_assignment_annotator_id"), ("add_index", "ix_assignment_clip_pair_id"),
        ("add_index", "ix_audit_event_action"), ("add_index", "ix_audit_event_actor"), ("add_index", "ix_audit_event_at"),
        ("add_index", "ix_connection_check_study_id"), ("add_index", "ix_erasure_record_study_id"),
        ("add_index", "ix_examiner_example_examiner_run_id"), ("add_index", "ix_examiner_run_system"),
        ("add_index", "ix_login_failure_client"), ("add_index", "ix_login_failure_failed_at"),
        ("add_index", "ix_login_failure_user_name"),
        ("add_index", "ix_questionnaire_response_participant_id"),
        ("add_index", "ix_questionnaire_response_session_id"),
        ("add_index", "ix_researcher_account_name"),
        ("add_index", "ix_skipped_trial_annotator_id"), ("add_index", "ix_skipped_trial_clip_pair_id"),
        ("add_table", "analysis_request"), ("add_table", "assignment"), ("add_table", "audit_event"),
        ("add_table", "connection_check"),
        ("add_table", "erasure_record"), ("add_table", "examiner_example"),
        ("add_table", "examiner_run"),
        ("add_table", "login_failure"),
        ("add_table", "questionnaire_response"), ("add_table", "researcher_account"),
        ("add_table", "skipped_trial")]
    assert sorted((d[2], d[3].name) for d in differences if d not in tables) == [
        ("annotator", "expires_at"), ("annotator", "practice_done_at"), ("annotator", "prolific_session_id"),
        ("annotator", "prolific_study_id"), ("clip_pair", "is_practice"),
        ("conversation_session", "analysable"), ("conversation_session", "heartbeat_at"), ("conversation_session", "network"),
        ("conversation_session", "quality_reason"), ("judgment", "artifact_rating_a"),
        ("judgment", "artifact_rating_b"), ("participant", "completion_code"), ("participant", "consents"),
        ("participant", "secret_sha256")]


def test_downgrade_to_base_and_back(empty_engine):
    init_db(empty_engine)
    downgrade(empty_engine, "0001")
    assert _tables(empty_engine) == {"study", "dialogue_system", "participant", "conversation_session", "recording"}
    downgrade(empty_engine, "base")
    assert _tables(empty_engine) == set()
    init_db(empty_engine)
    assert schema_differences(empty_engine) == []


def _insert(connection, table: str, **values) -> int:
    """Plain SQL inserts: an old database is filled without today's models."""
    columns = ", ".join(values)
    params = ", ".join(f":{k}" for k in values)
    return connection.execute(
        sa.text(f"INSERT INTO {table} ({columns}) VALUES ({params}) RETURNING id"), values
    ).scalar_one()


def test_rows_survive_the_upgrade_from_older_revisions(empty_engine):
    # A timestamp as each backend stores it (SQLite: naive UTC text).
    T = "2026-02-03 04:05:06.000000" if empty_engine.dialect.name == "sqlite" else "2026-02-03 04:05:06+00"
    upgrade(empty_engine, "0001")
    assert _tables(empty_engine) == {"study", "dialogue_system", "participant", "conversation_session", "recording"}
    with empty_engine.begin() as c:
        study = _insert(c, "study", name="old", title="Old study", config='{"topics": ["hiking"]}',
                        created_at=T, updated_at=T)
        system = _insert(c, "dialogue_system", study_id=study, name="cascaded", kind="cascaded", config="{}",
                         created_at=T)
        person = _insert(c, "participant", study_id=study, pseudonym="p-old", external_id="PID1", created_at=T)
        conversation = _insert(c, "conversation_session", participant_id=person, system_id=system, topic="hiking",
                               status="complete", started_at=T)
        recording = _insert(c, "recording", session_id=conversation, path="sessions/1.wav", sha256="aa",
                            kind="two-channel", sample_rate=16000, channels=2, system_channel=1, duration_s=12.5,
                            created_at=T)

    upgrade(empty_engine, "0002")
    with empty_engine.begin() as c:
        clip = _insert(c, "dialogue_clip", study_id=study, recording_id=recording, start_s=1.0, end_s=11.0,
                       duration_s=10.0, created_at=T)
        pair = _insert(c, "clip_pair", study_id=study, pair_id="p1", perturbation="gap-shift", natural_clip_id=clip,
                       perturbed_clip_id=clip, edit="{}", is_artifact_control=False, is_attention_check=True,
                       created_at=T)
        annotator = _insert(c, "annotator", study_id=study, token_hash="h", created_at=T)
        _insert(c, "judgment", annotator_id=annotator, clip_pair_id=pair, natural_side="A", choice="B", plays_a=1,
                plays_b=2, listened_s_a=3.0, listened_s_b=4.0, submitted_at=T)

    init_db(empty_engine)
    assert current_revision(empty_engine) == "0015"
    assert schema_differences(empty_engine) == []

    with session_scope(empty_engine) as session:
        old = session.exec(select(Study)).one()
        assert (old.name, old.title, old.config) == ("old", "Old study", {"topics": ["hiking"]})
        assert old.created_at.isoformat() == "2026-02-03T04:05:06+00:00"
        assert session.exec(select(DialogueSystem.name)).all() == ["cascaded"]
        assert session.exec(select(Participant.pseudonym, Participant.external_id)).all() == [("p-old", "PID1")]
        conversations = session.exec(select(ConversationSession.topic, ConversationSession.status,
                                            ConversationSession.analysable, ConversationSession.quality_reason)).all()
        assert conversations == [("hiking", "complete", None, None)]  # not checked yet: the analysis decides
        rec = session.exec(select(Recording)).one()
        assert (rec.path, rec.sample_rate, rec.channels, rec.system_channel, rec.duration_s) == (
            "sessions/1.wav", 16000, 2, 1, 12.5)
        assert session.exec(select(ClipPair.pair_id, ClipPair.is_attention_check)).all() == [("p1", True)]
        j = session.exec(select(Judgment)).one()
        assert (j.natural_side, j.choice, j.plays_a, j.plays_b, j.listened_s_b) == ("A", "B", 1, 2, 4.0)
        # and the new table works alongside the old rows
        save_analysis_result(session, "stats", f"session:{conversation}", {"x": 1}, {"gaps": 3}, study=old)


def test_refuses_a_database_it_did_not_create(empty_engine):
    with empty_engine.begin() as c:
        c.exec_driver_sql("CREATE TABLE study (id INTEGER PRIMARY KEY)")
    with pytest.raises(DatabaseError, match="no alembic_version"):
        init_db(empty_engine)

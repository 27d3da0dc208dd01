"""Database schema: studies, dialogue systems, participants, conversations, recordings,
annotation clips/pairs/judgments and cached analysis results.

Every change here needs a migration in `storage/migrations/versions/` (see storage/README.md);
the test suite checks that the migrations produce exactly this schema.

Times are timezone-aware UTC datetimes (`UTCDateTime`). Audio paths are relative to the data
root (see `storage.files`), with their sha256.
"""

from __future__ import annotations

import secrets
from datetime import datetime, timezone

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

# Deterministic constraint names, identical on SQLite and PostgreSQL, so migrations can name
# (and later drop or alter) them. Must be set before the tables below are defined.
SQLModel.metadata.naming_convention = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

SESSION_STATUSES = ("active", "complete", "incomplete", "failed")
SIDES = ("A", "B")


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


def new_pseudonym() -> str:
    """Random, unguessable participant id (128 bits), safe in URLs, never beginning with "-": a
    command line would read `--participant -x...` as an option (1 pseudonym in 64 did)."""
    while (pseudonym := secrets.token_urlsafe(16)).startswith("-"):
        pass
    return pseudonym


class UTCDateTime(sa.TypeDecorator):
    """Aware UTC datetimes in, aware UTC datetimes out, on SQLite (which stores no zone) too."""

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value, dialect):
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value}: pass a timezone-aware datetime (e.g. storage.models.utc_now())")
        value = value.astimezone(timezone.utc)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value, dialect):
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=timezone.utc)
        return value.astimezone(timezone.utc)


def _json_field(nullable: bool = False):
    if nullable:
        return Field(default=None, sa_type=sa.JSON)
    return Field(default_factory=dict, sa_type=sa.JSON)


def _time_field(nullable: bool = False):
    if nullable:
        return Field(default=None, sa_type=UTCDateTime)
    return Field(default_factory=utc_now, sa_type=UTCDateTime)


def _updated_field():
    """Set on insert, and again by every ORM update of the row."""
    return Field(default_factory=utc_now, sa_type=UTCDateTime, sa_column_kwargs={"onupdate": utc_now})


class Study(SQLModel, table=True):
    __tablename__ = "study"

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(unique=True)
    title: str = ""
    config: dict = _json_field()
    created_at: datetime = _time_field()
    updated_at: datetime = _updated_field()


class DialogueSystem(SQLModel, table=True):
    __tablename__ = "dialogue_system"
    __table_args__ = (sa.UniqueConstraint("study_id", "name"),)

    id: int | None = Field(default=None, primary_key=True)
    study_id: int = Field(foreign_key="study.id")
    name: str
    kind: str  # a kind's name ("cascaded", "cascade-backchannel"), a former name ("full-duplex"), or another label
    config: dict = _json_field()
    created_at: datetime = _time_field()


# Tables whose ids an erasure must never see given again (SQLite would reuse the largest after its
# row is deleted: migration 0014).
NEVER_REUSED = {"sqlite_autoincrement": True}


class Participant(SQLModel, table=True):
    __tablename__ = "participant"
    # One row per person per study; a Prolific PID cannot join the same study twice.
    __table_args__ = (sa.UniqueConstraint("study_id", "external_id"), NEVER_REUSED)

    id: int | None = Field(default=None, primary_key=True)
    study_id: int = Field(foreign_key="study.id")
    pseudonym: str = Field(default_factory=new_pseudonym, unique=True)
    external_id: str | None = None  # e.g. Prolific PID
    consent_at: datetime | None = _time_field(nullable=True)
    created_at: datetime = _time_field()
    # sha256 of the secret issued at consent (studies.participant_secret); the secret is never stored
    secret_sha256: str | None = None
    completion_code: str | None = None  # given once every system of the study was talked to
    # The study's optional consent items (studies.config: `consent_items`, e.g. recordings shared
    # with other researchers): item id -> {"agreed": bool, "at": ISO time of the answer}; {} when
    # the study asks none. Withdrawing one later sets "agreed" false with the time of withdrawal.
    consents: dict = _json_field()


class ConversationSession(SQLModel, table=True):
    __tablename__ = "conversation_session"
    __table_args__ = (
        sa.CheckConstraint("status IN ('active', 'complete', 'incomplete', 'failed')", name="status"),
        NEVER_REUSED,
    )

    id: int | None = Field(default=None, primary_key=True)
    participant_id: int = Field(foreign_key="participant.id", index=True)
    system_id: int = Field(foreign_key="dialogue_system.id", index=True)
    topic: str
    status: str = "active"
    started_at: datetime = _time_field()
    ended_at: datetime | None = _time_field(nullable=True)
    # refreshed by the process running the call (studies.sessions.LEASE_S): a call whose heartbeat
    # stopped was left by a dead process; its last heartbeat is about when its audio stopped
    heartbeat_at: datetime | None = _time_field(nullable=True)
    # Whether the call can be analysed as a conversation, decided when it ends
    # (studies.call_quality): False with the reason (no speech from the participant, no answer
    # from the system, shorter than the study's minimum); None = not checked yet (a running call,
    # or a row from before 0009: the background analysis decides it from its voice activity).
    analysable: bool | None = None
    quality_reason: str | None = None
    # The call's network as both ends measured it (studies.network_figures): round-trip time,
    # jitter, loss, concealment, playout delay, the candidate type, late audio blocks; None: not
    # measured (a scripted call, a row from before 0012).
    network: dict | None = _json_field(nullable=True)


class Recording(SQLModel, table=True):
    __tablename__ = "recording"
    __table_args__ = (NEVER_REUSED,)

    id: int | None = Field(default=None, primary_key=True)
    session_id: int | None = Field(default=None, foreign_key="conversation_session.id", index=True)
    path: str = Field(unique=True)  # relative to the data root
    sha256: str
    kind: str  # e.g. "two-channel", "listener"
    sample_rate: int
    channels: int
    system_channel: int | None = None  # None for human-human recordings
    duration_s: float
    created_at: datetime = _time_field()


class DialogueClip(SQLModel, table=True):
    __tablename__ = "dialogue_clip"
    __table_args__ = (NEVER_REUSED,)

    id: int | None = Field(default=None, primary_key=True)
    study_id: int = Field(foreign_key="study.id", index=True)
    recording_id: int | None = Field(default=None, foreign_key="recording.id", index=True)
    audio_path: str | None = None  # relative to the data root
    audio_sha256: str | None = None
    activity: dict | None = _json_field(nullable=True)  # voice-activity JSON (turntaking.activity)
    start_s: float
    end_s: float
    duration_s: float
    created_at: datetime = _time_field()


class ClipPair(SQLModel, table=True):
    __tablename__ = "clip_pair"
    __table_args__ = (sa.UniqueConstraint("study_id", "pair_id"), NEVER_REUSED)

    id: int | None = Field(default=None, primary_key=True)
    study_id: int = Field(foreign_key="study.id")
    pair_id: str  # the annotation manifest's id
    perturbation: str
    natural_clip_id: int = Field(foreign_key="dialogue_clip.id", index=True)
    perturbed_clip_id: int = Field(foreign_key="dialogue_clip.id", index=True)
    edit: dict = _json_field()  # what the perturbation changed
    is_artifact_control: bool = False
    is_attention_check: bool = False
    is_practice: bool = False  # shown in the practice trials only; never judged for the record
    created_at: datetime = _time_field()


class Annotator(SQLModel, table=True):
    __tablename__ = "annotator"
    __table_args__ = (sa.UniqueConstraint("study_id", "external_id"), NEVER_REUSED)

    id: int | None = Field(default=None, primary_key=True)
    study_id: int = Field(foreign_key="study.id")
    token_hash: str = Field(unique=True)  # sha256 of the access token; the token itself is never stored
    external_id: str | None = None  # e.g. Prolific PID
    created_at: datetime = _time_field()
    completed_at: datetime | None = _time_field(nullable=True)
    completion_code: str | None = None
    expires_at: datetime | None = _time_field(nullable=True)  # the token stops working then
    practice_done_at: datetime | None = _time_field(nullable=True)
    prolific_study_id: str | None = None
    prolific_session_id: str | None = None


class Judgment(SQLModel, table=True):
    __tablename__ = "judgment"
    # One judgment per annotator and pair: a resubmission cannot create a second row.
    __table_args__ = (
        sa.UniqueConstraint("annotator_id", "clip_pair_id"),
        sa.CheckConstraint("natural_side IN ('A', 'B')", name="natural_side"),
    )

    id: int | None = Field(default=None, primary_key=True)
    annotator_id: int = Field(foreign_key="annotator.id")
    clip_pair_id: int = Field(foreign_key="clip_pair.id", index=True)
    natural_side: str  # which side ("A" or "B") played the natural clip
    choice: str  # the side judged more natural, as the interface labels it (e.g. "A", "B")
    rating_a: float | None = None
    rating_b: float | None = None
    artifact_rating: float | None = None  # unused since 0004: one rating per clip below
    artifact_rating_a: float | None = None
    artifact_rating_b: float | None = None
    plays_a: int = 0
    plays_b: int = 0
    listened_s_a: float = 0.0
    listened_s_b: float = 0.0
    response_s: float | None = None  # from presentation to submission
    presented_at: datetime | None = _time_field(nullable=True)
    submitted_at: datetime = _time_field()


ASSIGNMENT_STATUSES = ("claimed", "done")


class Assignment(SQLModel, table=True):
    """A trial given to an annotator: the database's guarantee of K distinct judges per pair.

    A pair judged K times has K rows with slots 0..K-1; UNIQUE(pair, slot) stops a (K+1)th
    judge and UNIQUE(pair, annotator) a second look by the same judge, whatever the number of
    servers or threads. Attention checks go to every annotator and have no slot (NULL).
    A claim not judged by `expires_at` may be taken over by another annotator.
    """

    __tablename__ = "assignment"
    __table_args__ = (
        sa.UniqueConstraint("clip_pair_id", "slot"),
        sa.UniqueConstraint("clip_pair_id", "annotator_id"),
        sa.UniqueConstraint("annotator_id", "position"),
        sa.CheckConstraint("status IN ('claimed', 'done')", name="status"),
        sa.CheckConstraint("natural_side IN ('A', 'B')", name="natural_side"),
    )

    id: int | None = Field(default=None, primary_key=True)
    clip_pair_id: int = Field(foreign_key="clip_pair.id", index=True)
    annotator_id: int = Field(foreign_key="annotator.id", index=True)
    slot: int | None = None
    position: int  # the annotator's trial number, from 1
    natural_side: str  # side ("A" or "B") the natural clip is shown on, drawn at random per trial
    status: str = "claimed"
    claimed_at: datetime = _time_field()
    expires_at: datetime = _time_field()
    done_at: datetime | None = _time_field(nullable=True)


class SkippedTrial(SQLModel, table=True):
    """A trial an annotator could not do (a clip that would not play), reported and passed over.

    Its assignment row is deleted (the slot goes back to the pool); this row keeps the report and
    stops the pair from being offered to the same annotator again.
    """

    __tablename__ = "skipped_trial"
    __table_args__ = (sa.UniqueConstraint("annotator_id", "clip_pair_id"),)

    id: int | None = Field(default=None, primary_key=True)
    annotator_id: int = Field(foreign_key="annotator.id", index=True)
    clip_pair_id: int = Field(foreign_key="clip_pair.id", index=True)
    reason: str
    created_at: datetime = _time_field()


class ConnectionCheck(SQLModel, table=True):
    """A browser's check, before consent, of whether it can take part: a secure page, a
    microphone, a WebRTC connection to the server with the study's ICE servers. Every check is
    kept (the researcher's overview counts who could not connect, and why); nothing in it
    identifies more than the study link's external id (e.g. a Prolific PID)."""

    __tablename__ = "connection_check"

    id: int | None = Field(default=None, primary_key=True)
    study_id: int = Field(foreign_key="study.id", index=True)
    external_id: str | None = None
    created_at: datetime = _time_field()
    outcome: str = "pending"  # pending (started), ok, failed
    reason: str | None = None  # why it failed, in one line (insecure page, no microphone, no connection, ...)
    secure_context: bool | None = None
    microphone: str | None = None  # ok, denied, missing, busy, unsupported
    candidate_type: str | None = None  # the connected pair's local candidate: host, srflx, prflx, relay
    relay_protocol: str | None = None  # udp, tcp or tls where the page relays
    rtt_ms: float | None = None
    loss: float | None = None  # fraction of the server's audio packets lost
    user_agent: str | None = None
    token_sha256: str | None = None  # of the token the page acts for its check with (the token is not stored)


class QuestionnaireResponse(SQLModel, table=True):
    """A participant's answers to the questionnaire after one call (`part` "call:SESSION_ID",
    `session_id` set) or after the last call (`part` "after_last"). Stored once: the unique
    (participant, part) makes a resubmission or a second tab change nothing."""

    __tablename__ = "questionnaire_response"
    __table_args__ = (sa.UniqueConstraint("participant_id", "part"),)

    id: int | None = Field(default=None, primary_key=True)
    participant_id: int = Field(foreign_key="participant.id", index=True)
    session_id: int | None = Field(default=None, foreign_key="conversation_session.id", index=True)
    part: str
    answers: dict = _json_field()  # item id -> answer, as given (studies.questionnaire.answer_problem checked it)
    # The labels the participant saw -> the systems' names ("system-1" -> "cascaded"), for a pick or a rank
    systems: dict = _json_field()
    submitted_at: datetime = _time_field()


class LoginFailure(SQLModel, table=True):
    """A failed researcher login, kept for the throttle's window (storage.login_failures): in the
    database, so that every app process counts the same failures."""

    __tablename__ = "login_failure"

    id: int | None = Field(default=None, primary_key=True)
    client: str = Field(index=True)  # the browser's address
    user_name: str = Field(index=True)
    failed_at: datetime = Field(default_factory=utc_now, sa_type=UTCDateTime, index=True)


ERASURE_SUBJECTS = ("participant", "annotator")


class ErasureRecord(SQLModel, table=True):
    """That a person's data was erased (withdrawn by them, erased by a researcher, expired), kept
    without their identifier: `identifier_hashes` are sha256 of `salt` + each identifier they had
    (pseudonym, Prolific ID), so a second request is answered "already erased" and nothing here
    names them. `row_id` is the erased row's id in its table: a participant's place in the study's
    counterbalanced order depends on how many came before (studies.participant_api)."""

    __tablename__ = "erasure_record"

    id: int | None = Field(default=None, primary_key=True)
    study_id: int = Field(foreign_key="study.id", index=True)
    subject: str  # ERASURE_SUBJECTS
    row_id: int
    salt: str
    identifier_hashes: list = Field(default_factory=list, sa_type=sa.JSON)
    reason: str  # "withdrawn" (by the participant), "erased" (by a researcher), "retention"
    erased_by: str  # "participant", "annotator", a researcher's name, "retention"
    erased_at: datetime = _time_field()
    counts: dict = _json_field()  # what was removed: rows by table, files, bytes


RESEARCHER_ROLES = ("viewer", "analyst", "owner")  # each may do what the ones before it may


class ResearcherAccount(SQLModel, table=True):
    """A person of the researcher area (storage.researcher_accounts): their role, the studies they
    are members of (owners see every study), their password as an Argon2id hash."""

    __tablename__ = "researcher_account"

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(unique=True, index=True)
    role: str  # RESEARCHER_ROLES
    study_ids: list = Field(default_factory=list, sa_type=sa.JSON)  # memberships; owners: every study
    password_hash: str | None = None  # None: no login (the shared password's account, disabled)
    created_at: datetime = _time_field()
    disabled_at: datetime | None = Field(default=None, sa_type=UTCDateTime)


class AuditEvent(SQLModel, table=True):
    """One thing a researcher (or the platform on its own) did to the study data
    (storage.audit_trail): append-only, the database refuses to change or delete a row, and no
    erasure or retention touches it. `object` names what was acted on without naming a
    participant (a session id, a study, an erasure record)."""

    __tablename__ = "audit_event"

    id: int | None = Field(default=None, primary_key=True)
    at: datetime = Field(default_factory=utc_now, sa_type=UTCDateTime, index=True)
    actor: str = Field(index=True)  # an account's name, "cli:USER", "retention", "participant"
    address: str | None = None  # the browser's address; None from a command line
    action: str = Field(index=True)
    object: str | None = None
    detail: dict = _json_field()


class AnalysisResult(SQLModel, table=True):
    __tablename__ = "analysis_result"
    __table_args__ = (sa.UniqueConstraint("kind", "subject", "params_hash"),)

    id: int | None = Field(default=None, primary_key=True)
    study_id: int | None = Field(default=None, foreign_key="study.id", index=True)
    kind: str  # e.g. "stats", "judge-metrics", "naturalness"
    subject: str  # e.g. "session:12", "recording:3"
    parameters: dict = _json_field()
    params_hash: str
    result: dict = _json_field()
    created_at: datetime = _time_field()
    updated_at: datetime = _updated_field()


class AnalysisRequest(SQLModel, table=True):
    """A study whose cached analysis may be out of date (a call ended, clips arrived), and the
    background worker's progress on it (storage.analysis_queue, analysis.background). One row per
    study: requests arriving while it is computed only move `requested_at`, so it runs once more."""

    __tablename__ = "analysis_request"

    study_id: int = Field(foreign_key="study.id", primary_key=True)
    requested_at: datetime = _time_field()
    started_at: datetime | None = _time_field(nullable=True)  # the last pass's start
    finished_at: datetime | None = _time_field(nullable=True)
    worker: str | None = None  # the process computing it now; None when idle
    heartbeat_at: datetime | None = _time_field(nullable=True)
    stage: str = ""  # e.g. "judge metrics"
    stage_started_at: datetime | None = _time_field(nullable=True)
    done: int = 0  # items of the stage computed so far
    total: int = 0
    error: str | None = None  # the last pass's failure, one line


class ExaminerRun(SQLModel, table=True):
    """The automatic examiner's scores of one dialogue system on one task set (`python -m examiner
    run --store`): FDB's row and the overlap probes (`summary`), every task's report with its
    per-example rows (`scores`). Running the same system on the same set again replaces the row."""

    __tablename__ = "examiner_run"
    __table_args__ = (sa.UniqueConstraint("system", "task_set_hash"),)

    id: int | None = Field(default=None, primary_key=True)
    system: str = Field(index=True)  # the kind, with its config when it has one
    kind: str
    config: dict = _json_field()
    task_set: dict = _json_field()  # the set's manifest: seed, tasks, examples per task, voices
    task_set_hash: str
    calls: int
    summary: dict = _json_field()
    scores: dict = _json_field()
    run_dir: str
    created_at: datetime = _time_field()
    updated_at: datetime = _updated_field()


class ExaminerExample(SQLModel, table=True):
    """One example of a stored examiner run: its score (`tor`, `latency_s`) and its timeline
    (examiner/timelines.py: both channels' speech and envelope, the system's words, the task's
    marks, where the score was decided), for the per-example figure. Replaced with its run's row."""

    __tablename__ = "examiner_example"
    __table_args__ = (sa.UniqueConstraint("examiner_run_id", "task", "example"),)

    id: int | None = Field(default=None, primary_key=True)
    examiner_run_id: int = Field(foreign_key="examiner_run.id", index=True)
    task: str
    example: str
    tor: int | None = None
    latency_s: float | None = None
    timeline: dict = _json_field()

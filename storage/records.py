"""Small persistence functions the app calls, each taking an open Session.

They add and flush rows but never commit: the caller's `session_scope` decides.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from pathlib import Path

import soundfile
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlmodel import Session, select

from storage.files import default_data_root, normalize_relpath, resolve, sha256_file
from storage.models import (
    SESSION_STATUSES,
    SIDES,
    AnalysisResult,
    Annotator,
    ConversationSession,
    DialogueSystem,
    ExaminerExample,
    ExaminerRun,
    Judgment,
    Participant,
    Recording,
    Study,
    utc_now,
)


class NotFound(LookupError):
    pass


class RecordError(ValueError):
    """Values that cannot be stored (bad status, unreadable audio, conflicting recording...)."""


def _insert(session: Session, model):
    """INSERT with ON CONFLICT support for the session's database."""
    dialect = session.get_bind().dialect.name
    return (postgresql.insert if dialect == "postgresql" else sqlite.insert)(model)


# Studies and systems


def study_by_name(session: Session, name: str) -> Study | None:
    """The study called `name`, or None. Every lookup of a study by its name goes through here."""
    # NUL bytes and lone surrogates are in no study name, and PostgreSQL refuses them in a query
    if "\0" in name or any("\ud800" <= c <= "\udfff" for c in name):
        return None
    return session.exec(select(Study).where(Study.name == name)).first()


def get_study(session: Session, name: str) -> Study:
    """The study called `name`; NotFound (its one-line message names it) when there is none."""
    study = study_by_name(session, name)
    if study is None:
        raise NotFound(f"no study named {name!r}")
    return study


def get_or_create_study(session: Session, name: str, title: str = "", config: dict | None = None) -> Study:
    """The study called `name`, created with `title` and `config` if it does not exist yet."""
    study = study_by_name(session, name)
    if study is None:
        study = Study(name=name, title=title, config=config or {})
        session.add(study)
        session.flush()
    return study


def get_or_create_system(
    session: Session, study: Study, name: str, kind: str, config: dict | None = None
) -> DialogueSystem:
    system = session.exec(
        select(DialogueSystem).where(DialogueSystem.study_id == study.id, DialogueSystem.name == name)
    ).first()
    if system is None:
        system = DialogueSystem(study_id=study.id, name=name, kind=kind, config=config or {})
        session.add(system)
        session.flush()
    return system


def get_system(session: Session, study: Study, name: str) -> DialogueSystem:
    system = session.exec(
        select(DialogueSystem).where(DialogueSystem.study_id == study.id, DialogueSystem.name == name)
    ).first()
    if system is None:
        raise NotFound(f"study {study.name!r} has no dialogue system named {name!r}")
    return system


# Participants and conversations


def get_or_create_participant(
    session: Session, study: Study, external_id: str | None = None, consent_at=None
) -> Participant:
    """The participant with this external id (e.g. Prolific PID) in the study, or a new one
    with a fresh random pseudonym. Without an external id, always a new participant."""
    if external_id is not None:
        participant = session.exec(
            select(Participant).where(Participant.study_id == study.id, Participant.external_id == external_id)
        ).first()
        if participant is not None:
            if consent_at is not None and participant.consent_at is None:
                participant.consent_at = consent_at
                session.flush()
            return participant
    participant = Participant(study_id=study.id, external_id=external_id, consent_at=consent_at)
    session.add(participant)
    session.flush()
    return participant


def get_participant(session: Session, pseudonym: str) -> Participant:
    if "\0" in pseudonym:  # never in a pseudonym, and PostgreSQL refuses it in a query
        raise NotFound(f"no participant with pseudonym {pseudonym!r}")
    participant = session.exec(select(Participant).where(Participant.pseudonym == pseudonym)).first()
    if participant is None:
        raise NotFound(f"no participant with pseudonym {pseudonym!r}")
    return participant


def start_session(
    session: Session, participant: Participant, system: DialogueSystem, topic: str
) -> ConversationSession:
    if system.study_id != participant.study_id:
        raise RecordError(f"system {system.name!r} and participant {participant.pseudonym!r} are in different studies")
    conversation = ConversationSession(participant_id=participant.id, system_id=system.id, topic=topic,
                                       heartbeat_at=utc_now())
    session.add(conversation)
    session.flush()
    return conversation


def end_session(session: Session, conversation: ConversationSession, status: str = "complete",
                ended_at=None) -> ConversationSession:
    """`ended_at`: when the call stopped, if not now (a crashed call: its last audio)."""
    if status not in SESSION_STATUSES:
        raise RecordError(f"session status {status!r} is not one of {', '.join(SESSION_STATUSES)}")
    conversation.status = status
    conversation.ended_at = ended_at or utc_now()
    session.add(conversation)
    session.flush()
    return conversation


def set_session_quality(session: Session, session_id: int, analysable: bool, reason: str | None) -> bool:
    """Store whether a session can be analysed (studies.call_quality) where it is not decided yet;
    False when it already was (the verdict of its call's end stands)."""
    done = session.execute(
        sa.update(ConversationSession)
        .where(ConversationSession.id == session_id, ConversationSession.analysable.is_(None))
        .values(analysable=analysable, quality_reason=reason)
    )
    return done.rowcount == 1


# Recordings


def add_recording(
    session: Session,
    relpath: str,
    *,
    kind: str,
    data_root: Path | str | None = None,
    conversation: ConversationSession | None = None,
    system_channel: int | None = None,
) -> Recording:
    """Register an audio file already stored under the data root (see `storage.files.store_file`).

    Sample rate, channels, duration and sha256 are read from the file itself. Registering the
    same file again returns the existing row; a different file at a registered path is refused.
    """
    relpath = normalize_relpath(relpath)
    path = resolve(relpath, data_root if data_root is not None else default_data_root())
    try:
        info = soundfile.info(str(path))
    except (soundfile.LibsndfileError, RuntimeError, OSError) as e:
        raise RecordError(f"cannot read audio {relpath!r}: {e}") from None
    if system_channel is not None and not 0 <= system_channel < info.channels:
        raise RecordError(f"system_channel {system_channel} does not exist in {relpath!r} ({info.channels} channels)")
    checksum = sha256_file(path)
    existing = session.exec(select(Recording).where(Recording.path == relpath)).first()
    if existing is not None:
        if existing.sha256 != checksum:
            raise RecordError(f"recording {relpath!r} is registered with another checksum: the file has changed")
        return existing
    recording = Recording(
        session_id=conversation.id if conversation is not None else None,
        path=relpath,
        sha256=checksum,
        kind=kind,
        sample_rate=info.samplerate,
        channels=info.channels,
        system_channel=system_channel,
        duration_s=info.frames / info.samplerate,
    )
    session.add(recording)
    session.flush()
    return recording


# Annotators and judgments


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def create_annotator(session: Session, study: Study, external_id: str | None = None) -> tuple[Annotator, str]:
    """A new annotator and their access token; only the token's hash is stored."""
    token = secrets.token_urlsafe(24)
    annotator = Annotator(study_id=study.id, token_hash=hash_token(token), external_id=external_id)
    session.add(annotator)
    session.flush()
    return annotator, token


def get_annotator(session: Session, token: str) -> Annotator:
    annotator = session.exec(select(Annotator).where(Annotator.token_hash == hash_token(token))).first()
    if annotator is None:
        raise NotFound("unknown annotator token")
    return annotator


def record_judgment(session: Session, judgment: Judgment) -> tuple[Judgment, bool]:
    """Store `judgment` unless this annotator already judged this pair.

    Returns (the stored judgment, whether it was new). A resubmission keeps the first answer;
    the database's UNIQUE(annotator, pair) makes this hold under concurrent submissions too.
    """
    for side in (judgment.natural_side, judgment.choice):
        if side not in SIDES:
            raise RecordError(f"judgment side {side!r} is not one of {', '.join(SIDES)}")
    values = judgment.model_dump(exclude={"id"})
    inserted = session.exec(
        _insert(session, Judgment)
        .values(**values)
        .on_conflict_do_nothing(index_elements=["annotator_id", "clip_pair_id"])
        .returning(Judgment.id)
    ).first()
    stored = session.exec(
        select(Judgment).where(
            Judgment.annotator_id == judgment.annotator_id, Judgment.clip_pair_id == judgment.clip_pair_id
        )
    ).one()
    return stored, inserted is not None


# Analysis results


def params_hash(parameters: dict) -> str:
    """sha256 of the parameters as canonical JSON (sorted keys): equal dicts, equal hashes."""
    try:
        text = json.dumps(parameters, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as e:
        raise RecordError(f"analysis parameters must be plain JSON values: {e}") from None
    return hashlib.sha256(text.encode()).hexdigest()


def save_analysis_result(
    session: Session, kind: str, subject: str, parameters: dict, result: dict, study: Study | None = None
) -> AnalysisResult:
    """Insert or replace the result for (kind, subject, parameters)."""
    digest = params_hash(parameters)
    params_hash(result)  # same JSON check for the result
    now = utc_now()
    statement = _insert(session, AnalysisResult).values(
        study_id=study.id if study is not None else None,
        kind=kind,
        subject=subject,
        parameters=parameters,
        params_hash=digest,
        result=result,
        created_at=now,
        updated_at=now,
    )
    statement = statement.on_conflict_do_update(
        index_elements=["kind", "subject", "params_hash"],
        set_={"result": statement.excluded.result, "study_id": statement.excluded.study_id, "updated_at": now},
    )
    session.exec(statement)
    stored = load_analysis_result(session, kind, subject, parameters)
    session.refresh(stored)  # the row may already have been in the session with old values
    return stored


def load_analysis_result(session: Session, kind: str, subject: str, parameters: dict) -> AnalysisResult | None:
    return session.exec(
        select(AnalysisResult).where(
            AnalysisResult.kind == kind,
            AnalysisResult.subject == subject,
            AnalysisResult.params_hash == params_hash(parameters),
        )
    ).first()


def save_examiner_run(session: Session, system: str, kind: str, config: dict, task_set: dict, calls: int,
                      summary: dict, scores: dict, run_dir: str) -> ExaminerRun:
    """Insert or replace the examiner's scores of `system` on the task set `task_set` (its manifest)."""
    digest = params_hash(task_set)
    params_hash(scores)  # plain JSON only
    now = utc_now()
    values = {"config": config, "task_set": task_set, "calls": calls, "summary": summary, "scores": scores,
              "run_dir": run_dir, "updated_at": now}
    statement = _insert(session, ExaminerRun).values(system=system, kind=kind, task_set_hash=digest, created_at=now,
                                                     **values)
    session.exec(statement.on_conflict_do_update(index_elements=["system", "task_set_hash"], set_=values))
    stored = session.exec(select(ExaminerRun).where(ExaminerRun.system == system,
                                                    ExaminerRun.task_set_hash == digest)).one()
    session.refresh(stored)
    return stored


def examiner_runs(session: Session, system: str | None = None) -> list[ExaminerRun]:
    """Stored examiner runs, newest first (of one system, when named)."""
    query = select(ExaminerRun).order_by(ExaminerRun.updated_at.desc(), ExaminerRun.id.desc())
    if system is not None:
        query = query.where(ExaminerRun.system == system)
    return list(session.exec(query).all())


def save_examiner_examples(session: Session, run: ExaminerRun, timelines: list[dict]) -> int:
    """Replace the examples of a stored run by `timelines` (examiner/timelines.py); how many."""
    session.exec(sa.delete(ExaminerExample).where(ExaminerExample.examiner_run_id == run.id))
    for timeline in timelines:
        params_hash(timeline)  # plain JSON only
        decision = timeline.get("decision", {})
        session.add(ExaminerExample(examiner_run_id=run.id, task=timeline["task"], example=str(timeline["example"]),
                                    tor=decision.get("tor"), latency_s=decision.get("latency_s"), timeline=timeline))
    session.flush()
    return len(timelines)


def examiner_examples(session: Session, run_id: int) -> list[ExaminerExample]:
    """A stored run's examples, by task and example."""
    rows = session.exec(select(ExaminerExample).where(ExaminerExample.examiner_run_id == run_id)).all()
    return sorted(rows, key=lambda r: (r.task, int(r.example) if r.example.isdigit() else 0, r.example))

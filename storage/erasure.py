"""Erasing one person's data from a study: every row and every file of a participant or an
annotator, the cached analysis that included them, and the database's own leftovers (SQLite's
free pages and write-ahead log, PostgreSQL's dead tuples).

    plan = erasure_plan(engine, "pilot", "participant", "5f2c...")   # what would go (a dry run)
    outcome = erase(engine, "pilot", "participant", "5f2c...", erased_by="ana", reason="erased")

A participant is found by their Prolific ID or pseudonym, an annotator by their Prolific ID or
their pseudonym in the exports (`annotator-N`). What goes:

- participant: their sessions, recordings, questionnaire answers and connection checks (matched
  by their Prolific ID), the clips cut from their recordings with the clip pairs made of them and
  every judgment and trial of those pairs, the cached results of their sessions and clips, and
  the files: each session's folder under the data root (`call.wav`, timing and network logs,
  the listener recording), the clips' audio and the data root's cache of copies served to
  researchers (storage.files.CACHE_DIR: made again when asked for); a participant whose call is
  still running is refused (the withdrawal route ends the call first);
- annotator: their judgments, trials (claimed or done: the slots go back to the pool, so every
  pair still gets exactly K judges) and skipped trials.

Then the study's aggregate results are dropped and its analysis queued again, and an
`ErasureRecord` keeps what was removed, when and by whom, with salted hashes of the identifiers
instead of them: a second request is answered "already erased". The other people's rows and
files are not touched: a running call of another participant goes on.

SQLite connections run with `secure_delete` (storage.db), so deleted rows are overwritten with
zeros; after the deletion the write-ahead log is checkpointed and truncated and the file vacuumed,
so no free page and no old log frame holds the erased rows. PostgreSQL: the touched tables get
`VACUUM FULL` (rewritten without the dead tuples); its own write-ahead log segments and any base
backups are the operator's (docs/data-protection.md).
"""

from __future__ import annotations

import hashlib
import secrets
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

import sqlalchemy as sa
from sqlmodel import Session, select

from storage import audit_trail
from storage.analysis_queue import request_analysis
from storage.db import session_scope
from storage.files import CACHE_DIR, UnsafePath, default_data_root, resolve, session_dir
from storage.models import (
    AnalysisResult,
    Annotator,
    Assignment,
    ClipPair,
    ConnectionCheck,
    ConversationSession,
    DialogueClip,
    ErasureRecord,
    Judgment,
    Participant,
    QuestionnaireResponse,
    Recording,
    SkippedTrial,
    Study,
)

SUBJECTS = ("participant", "annotator")
REASONS = ("withdrawn", "erased", "retention")
# The tables an erasure deletes from, in an order that keeps the foreign keys satisfied.
TABLES = ("analysis_result", "judgment", "assignment", "skipped_trial", "clip_pair", "dialogue_clip",
          "questionnaire_response", "recording", "conversation_session", "connection_check", "participant",
          "annotator")


class ErasureError(ValueError):
    """An erasure that cannot be done (an unknown study or person); nothing was removed."""


class AlreadyErased(ErasureError):
    """The person was erased before: their data is gone already."""

    def __init__(self, message: str, record: ErasureRecord):
        super().__init__(message)
        self.record = record


@dataclass(frozen=True)
class ErasurePlan:
    """What erasing one person removes: row ids by table, files and folders under the data root."""

    study_id: int
    subject: str
    row_id: int
    identifiers: tuple[str, ...]  # the pseudonym and the Prolific ID: hashed into the record, never stored
    rows: dict[str, tuple[int, ...]] = field(default_factory=dict)
    paths: tuple[str, ...] = ()  # files and folders, relative to the data root

    def counts(self) -> dict:
        return {table: len(ids) for table, ids in self.rows.items() if ids}

    def describe(self) -> list[str]:
        """One line per table and per path, for a dry run."""
        lines = [f"{table}: {len(ids)} row(s)" for table, ids in self.rows.items() if ids]
        return lines + [f"file: {path}" for path in self.paths]


@dataclass(frozen=True)
class ErasureOutcome:
    plan: ErasurePlan
    record_id: int
    files_removed: int
    bytes_removed: int


def identifier_hash(salt: str, identifier: str) -> str:
    return hashlib.sha256(f"{salt}:{identifier}".encode()).hexdigest()


def annotator_pseudonym(annotator_id: int) -> str:
    """How exports and views name an annotator."""
    return f"annotator-{annotator_id}"


def erased_before(session: Session, study_id: int, subject: str, identifier: str) -> ErasureRecord | None:
    """The erasure record of the person `identifier` names, if they were erased."""
    return _record_naming(select(ErasureRecord).where(ErasureRecord.study_id == study_id,
                                                      ErasureRecord.subject == subject), session, identifier)


def _record_naming(query, session: Session, identifier: str) -> ErasureRecord | None:
    records = session.exec(query).all()
    return next((r for r in records if identifier_hash(r.salt, identifier) in r.identifier_hashes), None)


def erased_in_any_study(session: Session, subject: str, identifier: str) -> ErasureRecord | None:
    """The erasure record naming `identifier` in whichever study (an annotator's token hash, which
    says nothing of its study)."""
    return _record_naming(select(ErasureRecord).where(ErasureRecord.subject == subject), session, identifier)


def erased_rows_before(session: Session, study_id: int, subject: str, row_id: int) -> int:
    """How many erased rows of `subject` in the study came before row `row_id`."""
    return session.exec(select(sa.func.count()).where(
        ErasureRecord.study_id == study_id, ErasureRecord.subject == subject, ErasureRecord.row_id < row_id)).one()


def _study(session: Session, study_name: str) -> Study:
    study = session.exec(select(Study).where(Study.name == study_name)).first()
    if study is None:
        raise ErasureError(f"there is no study called {study_name!r}")
    return study


def find_person(session: Session, study: Study, subject: str, identifier: str) -> Participant | Annotator:
    """The participant (by Prolific ID or pseudonym) or annotator (by Prolific ID or `annotator-N`);
    AlreadyErased or ErasureError when there is none."""
    if subject not in SUBJECTS:
        raise ErasureError(f"unknown kind of person {subject!r}: participant or annotator")
    if not isinstance(identifier, str) or not identifier.strip() or "\0" in identifier:
        raise ErasureError(f"an empty or unusable {subject} id")
    found = None
    if subject == "participant":
        found = session.exec(select(Participant).where(
            Participant.study_id == study.id,
            sa.or_(Participant.external_id == identifier, Participant.pseudonym == identifier))).first()
    else:
        found = session.exec(select(Annotator).where(
            Annotator.study_id == study.id, Annotator.external_id == identifier)).first()
        prefix = annotator_pseudonym(0)[:-1]
        if found is None and identifier.startswith(prefix) and identifier[len(prefix):].isdigit():
            row = session.get(Annotator, int(identifier[len(prefix):]))
            found = row if row is not None and row.study_id == study.id else None
    if found is not None:
        return found
    record = erased_before(session, study.id, subject, identifier)
    if record is not None:
        raise AlreadyErased(f"{subject} {identifier!r} of study {study.name!r} was already erased "
                            f"({record.erased_at:%Y-%m-%d %H:%M} UTC, {record.reason}, by {record.erased_by})", record)
    raise ErasureError(f"study {study.name!r} has no {subject} {identifier!r} (by Prolific ID or pseudonym)")


def _ids(session: Session, column, *where) -> tuple[int, ...]:
    return tuple(session.exec(select(column).where(*where)).all())


def participant_plan(session: Session, participant: Participant) -> ErasurePlan:
    study_id = participant.study_id
    sessions = _ids(session, ConversationSession.id, ConversationSession.participant_id == participant.id)
    running = _ids(session, ConversationSession.id, ConversationSession.id.in_(sessions),
                   ConversationSession.status == "active")
    if running:  # its recorder still writes into the session's folder: end the call first
        raise ErasureError(f"the participant has a call in progress (session {running[0]}): erase them once it "
                           "has ended (a withdrawal ends it first)")
    recordings = session.exec(select(Recording.id, Recording.path).where(Recording.session_id.in_(sessions))).all()
    recording_ids = tuple(r[0] for r in recordings)
    clips = session.exec(select(DialogueClip.id, DialogueClip.audio_path).where(
        DialogueClip.recording_id.in_(recording_ids))).all()
    clip_ids = tuple(c[0] for c in clips)
    pairs = _ids(session, ClipPair.id, sa.or_(ClipPair.natural_clip_id.in_(clip_ids),
                                              ClipPair.perturbed_clip_id.in_(clip_ids)))
    subjects = [f"session:{i}" for i in sessions] + [f"clip:{i}" for i in clip_ids] + [f"study:{study_id}"]
    checks = () if participant.external_id is None else _ids(
        session, ConnectionCheck.id, ConnectionCheck.study_id == study_id,
        ConnectionCheck.external_id == participant.external_id)
    rows = {
        "analysis_result": _ids(session, AnalysisResult.id, AnalysisResult.study_id == study_id,
                                AnalysisResult.subject.in_(subjects)),
        "judgment": _ids(session, Judgment.id, Judgment.clip_pair_id.in_(pairs)),
        "assignment": _ids(session, Assignment.id, Assignment.clip_pair_id.in_(pairs)),
        "skipped_trial": _ids(session, SkippedTrial.id, SkippedTrial.clip_pair_id.in_(pairs)),
        "clip_pair": pairs,
        "dialogue_clip": clip_ids,
        "questionnaire_response": _ids(session, QuestionnaireResponse.id,
                                       QuestionnaireResponse.participant_id == participant.id),
        "recording": recording_ids,
        "conversation_session": sessions,
        "connection_check": checks,
        "participant": (participant.id,),
    }
    paths = [session_dir(i) for i in sessions]
    paths += [path for _, path in recordings if not any(path.startswith(d + "/") for d in paths)]
    paths += [path for _, path in clips if path]
    identifiers = tuple(i for i in (participant.pseudonym, participant.external_id) if i)
    return ErasurePlan(study_id, "participant", participant.id, identifiers, rows, tuple(paths))


def annotator_plan(session: Session, annotator: Annotator) -> ErasurePlan:
    rows = {
        "analysis_result": _ids(session, AnalysisResult.id, AnalysisResult.study_id == annotator.study_id,
                                AnalysisResult.subject == f"study:{annotator.study_id}"),
        "judgment": _ids(session, Judgment.id, Judgment.annotator_id == annotator.id),
        "assignment": _ids(session, Assignment.id, Assignment.annotator_id == annotator.id),
        "skipped_trial": _ids(session, SkippedTrial.id, SkippedTrial.annotator_id == annotator.id),
        "annotator": (annotator.id,),
    }
    # the hash of their link's token too: a page opened again with it is told they withdrew
    identifiers = tuple(i for i in (annotator_pseudonym(annotator.id), annotator.external_id, annotator.token_hash)
                        if i)
    return ErasurePlan(annotator.study_id, "annotator", annotator.id, identifiers, rows)


MODELS = {"analysis_result": AnalysisResult, "judgment": Judgment, "assignment": Assignment,
          "skipped_trial": SkippedTrial, "clip_pair": ClipPair, "dialogue_clip": DialogueClip,
          "questionnaire_response": QuestionnaireResponse, "recording": Recording,
          "conversation_session": ConversationSession, "connection_check": ConnectionCheck,
          "participant": Participant, "annotator": Annotator}


def _plan(session: Session, study: Study, subject: str, identifier: str) -> ErasurePlan:
    person = find_person(session, study, subject, identifier)
    return participant_plan(session, person) if subject == "participant" else annotator_plan(session, person)


def erasure_plan(engine, study_name: str, subject: str, identifier: str) -> ErasurePlan:
    """What erasing the person would remove (a dry run: nothing changes)."""
    with session_scope(engine) as session:
        return _plan(session, _study(session, study_name), subject, identifier)


def erase(engine, study_name: str, subject: str, identifier: str, erased_by: str, reason: str = "erased",
          data_root: Path | str | None = None, scrub: bool = True) -> ErasureOutcome:
    """Remove every row and file of the person in one transaction (the files once it committed),
    record the erasure, queue the study's analysis again and, with `scrub`, leave no copy in the
    database's free pages or log (`scrub_database`). AlreadyErased / ErasureError: nothing removed."""
    if reason not in REASONS:
        raise ErasureError(f"unknown reason {reason!r}: one of {', '.join(REASONS)}")
    root = Path(data_root if data_root is not None else default_data_root())
    with session_scope(engine) as session:
        study = _study(session, study_name)
        if session.get_bind().dialect.name == "postgresql":  # as annotation.assignment's claims do
            session.exec(select(Study.id).where(Study.id == study.id).with_for_update())
        plan = _plan(session, study, subject, identifier)
        for table in TABLES:
            ids = plan.rows.get(table, ())
            if ids:
                model = MODELS[table]
                session.exec(sa.delete(model).where(model.id.in_(ids)))
        salt = secrets.token_hex(16)
        files, size = _files_under(root, plan.paths)
        counts = {**plan.counts(), "files": files, "bytes": size}
        record = ErasureRecord(study_id=study.id, subject=subject, row_id=plan.row_id, salt=salt,
                               identifier_hashes=[identifier_hash(salt, i) for i in plan.identifiers],
                               reason=reason, erased_by=erased_by, counts=counts)
        session.add(record)
        request_analysis(session, study.id)
        session.flush()
        record_id = record.id
        action = {"withdrawn": "withdrawn", "retention": "retention_applied"}.get(reason, "erased")
        session.add(audit_trail.entry(erased_by, action, object=f"erasure record {record_id}", study=study.name,
                                      subject=subject, **plan.counts()))
    for path in plan.paths:
        _remove(root, path)
    clear_cache(root)
    if scrub:
        scrub_database(engine, [t for t in TABLES if plan.rows.get(t)] + ["erasure_record"])
    return ErasureOutcome(plan, record_id, files, size)


def _files_under(root: Path, paths) -> tuple[int, int]:
    files = size = 0
    for relpath in paths:
        try:
            path = resolve(relpath, root)
        except UnsafePath:
            continue
        found = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()] if path.is_dir() else []
        files += len(found)
        size += sum(p.stat().st_size for p in found)
    return files, size


def _remove(root: Path, relpath: str) -> None:
    path = resolve(relpath, root)
    if path.is_dir():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def clear_cache(root: Path) -> None:
    """Empty the data root's cache (storage.files.CACHE_DIR): copies served to researchers, built
    reports and exports; each is made again when asked for."""
    cache = root / CACHE_DIR
    for path in cache.iterdir() if cache.is_dir() else []:
        for item in path.iterdir() if path.is_dir() else [path]:
            shutil.rmtree(item, ignore_errors=True) if item.is_dir() else item.unlink(missing_ok=True)


def scrub_database(engine, tables: list[str] | None = None, timeout_s: float = 60.0) -> None:
    """No trace of deleted rows left in the database's files: SQLite's log checkpointed into the
    file and truncated, the file vacuumed (free pages gone); PostgreSQL's `tables` rewritten."""
    if engine.dialect.name == "postgresql":
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
            for table in tables or TABLES:
                connection.exec_driver_sql(f'VACUUM FULL "{table}"')
        return
    database = engine.url.database
    if not database or database == ":memory:":
        return
    import sqlite3

    # Its own connection: VACUUM cannot run inside the BEGIN IMMEDIATE the engine's sessions open.
    connection = sqlite3.connect(database, timeout=timeout_s, isolation_level=None)
    try:
        connection.execute("PRAGMA secure_delete = ON")
        _checkpoint(connection, timeout_s)
        connection.execute("VACUUM")
        _checkpoint(connection, timeout_s)
    finally:
        connection.close()


def _checkpoint(connection, timeout_s: float) -> None:
    """Copy the whole log into the file and truncate it; a reader of an older snapshot (another
    process's query) holds frames back, so try again until it is done."""
    deadline = time.monotonic() + timeout_s
    while True:
        busy, _, _ = connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if not busy:
            return
        if time.monotonic() > deadline:
            raise ErasureError("the database's log could not be emptied: a reader held it "
                               f"for {timeout_s:.0f} s (run the erasure again)")
        time.sleep(0.05)


def erasure_records(session: Session, study_id: int) -> list[ErasureRecord]:
    return list(session.exec(select(ErasureRecord).where(ErasureRecord.study_id == study_id)
                             .order_by(ErasureRecord.id)).all())


__all__ = ["AlreadyErased", "ErasureError", "ErasureOutcome", "ErasurePlan", "annotator_pseudonym", "erase",
           "erased_before", "erased_in_any_study", "erased_rows_before", "erasure_plan", "erasure_records", "find_person",
           "identifier_hash", "scrub_database"]

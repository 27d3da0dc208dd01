"""A study's retention periods (its study file's `retention:`), applied: what has expired at a given
time, and removing it.

    retention: {identifiers_days: 30, recordings_days: 365, all_days: 1825}

Each period counts from a participant's consent (their row's creation without one) and an
annotator's start:

- `identifiers_days`: Prolific IDs (participants', annotators', connection checks') and Prolific's
  study and session ids are dropped; pseudonyms stay, so every measure still joins up;
- `recordings_days`: a participant's audio and transcripts go: the session's folder (call and
  listener recordings, the timing log with the system's words), the clips cut from it, their
  recording rows and the words of the cached voice activity; the session, its network figures,
  its quality and every measure computed from it stay;
- `all_days`: everything of the person is erased as `python -m studies erase` does
  (storage.erasure), with an erasure record saying "retention".

`expired(engine, study, now)` lists what has expired at `now`; `apply_expired` removes exactly what
that lists (one plan, then its actions), so `python -m studies retention` (a dry run) shows what
`--apply` removes. The background worker (analysis.background) applies it for every study.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import sqlalchemy as sa
from sqlmodel import select

from storage import audit_trail
from storage.db import session_scope
from storage.erasure import ErasureError, annotator_pseudonym, erase, scrub_database
from storage.files import default_data_root, resolve, session_dir
from storage.models import (
    AnalysisResult,
    Annotator,
    ConnectionCheck,
    ConversationSession,
    DialogueClip,
    Participant,
    Recording,
    Study,
    utc_now,
)
from studies.config import study_settings
from studies.network_figures import NETWORK_FILE

RULES = ("identifiers", "recordings", "all")


@dataclass(frozen=True)
class Expired:
    """One thing that has expired: `rule` (RULES) of one person (or one connection check)."""

    rule: str
    subject: str  # "participant", "annotator", "connection_check"
    row_id: int
    name: str  # the pseudonym (or "check N"): how the listing names it
    what: str  # what goes, in words

    def line(self) -> str:
        return f"{self.rule}: {self.subject} {self.name}: {self.what}"


def _since(days: float, now: datetime) -> datetime:
    return now - timedelta(days=days)


def expired(engine, study_name: str, now: datetime | None = None) -> list[Expired]:
    """What the study's retention periods remove at `now` (nothing without `retention:`)."""
    now = now or utc_now()
    with session_scope(engine) as session:
        study = session.exec(select(Study).where(Study.name == study_name)).first()
        if study is None:
            raise ValueError(f"there is no study called {study_name!r}")
        periods = study_settings(study).retention
        found: list[Expired] = []
        started = sa.func.coalesce(Participant.consent_at, Participant.created_at)
        gone = set()
        covered = set()  # Prolific IDs whose connection checks go with their participant's item
        if "all_days" in periods:
            cut = _since(periods["all_days"], now)
            for p in session.exec(select(Participant).where(Participant.study_id == study.id, started <= cut)
                                  .order_by(Participant.id)).all():
                gone.add(("participant", p.id))
                covered.add(p.external_id)
                found.append(Expired("all", "participant", p.id, p.pseudonym, "every row and file"))
            for a in session.exec(select(Annotator).where(Annotator.study_id == study.id, Annotator.created_at <= cut)
                                  .order_by(Annotator.id)).all():
                gone.add(("annotator", a.id))
                found.append(Expired("all", "annotator", a.id, annotator_pseudonym(a.id), "every row"))
        if "recordings_days" in periods:
            cut = _since(periods["recordings_days"], now)
            rows = session.exec(
                select(Participant.id, Participant.pseudonym, sa.func.count(Recording.id))
                .join(ConversationSession, ConversationSession.participant_id == Participant.id)
                .join(Recording, Recording.session_id == ConversationSession.id)
                .where(Participant.study_id == study.id, started <= cut)
                .group_by(Participant.id, Participant.pseudonym).order_by(Participant.id)).all()
            for row_id, pseudonym, n in rows:
                if ("participant", row_id) not in gone:
                    found.append(Expired("recordings", "participant", row_id, pseudonym,
                                         f"{n} recording(s), their clips and transcripts"))
        if "identifiers_days" in periods:
            cut = _since(periods["identifiers_days"], now)
            for p in session.exec(select(Participant).where(
                    Participant.study_id == study.id, started <= cut, Participant.external_id.is_not(None))
                    .order_by(Participant.id)).all():
                if ("participant", p.id) not in gone:
                    covered.add(p.external_id)
                    found.append(Expired("identifiers", "participant", p.id, p.pseudonym,
                                         "Prolific ID (and on their connection checks)"))
            for a in session.exec(select(Annotator).where(
                    Annotator.study_id == study.id, Annotator.created_at <= cut,
                    sa.or_(Annotator.external_id.is_not(None), Annotator.prolific_session_id.is_not(None),
                           Annotator.prolific_study_id.is_not(None))).order_by(Annotator.id)).all():
                if ("annotator", a.id) not in gone:
                    found.append(Expired("identifiers", "annotator", a.id, annotator_pseudonym(a.id),
                                         "Prolific IDs (participant, study, session)"))
            for check_id, external in session.exec(select(ConnectionCheck.id, ConnectionCheck.external_id).where(
                    ConnectionCheck.study_id == study.id, ConnectionCheck.created_at <= cut,
                    ConnectionCheck.external_id.is_not(None)).order_by(ConnectionCheck.id)).all():
                if external not in covered:  # one who never consented
                    found.append(Expired("identifiers", "connection_check", check_id, f"check {check_id}", "Prolific ID"))
    return found


def apply_expired(engine, study_name: str, items: list[Expired], data_root: Path | str | None = None) -> int:
    """Remove what `items` (from `expired`) lists; returns how many were applied."""
    root = Path(data_root if data_root is not None else default_data_root())
    for item in items:
        if item.rule == "all":
            try:
                erase(engine, study_name, item.subject, item.name, erased_by="retention", reason="retention",
                      data_root=root, scrub=False)
            except ErasureError:  # erased meanwhile (a withdrawal, another worker): nothing left to do
                continue
        elif item.rule == "recordings":
            _drop_recordings(engine, item.row_id, root)
        else:
            _drop_identifiers(engine, item)
    if items:
        scrub_database(engine)
        audit_trail.record(engine, "retention", "retention_applied", object=study_name,
                           **{rule: sum(item.rule == rule for item in items) for rule in RULES})
    return len(items)


def apply_everywhere(engine, now: datetime | None = None, data_root: Path | str | None = None) -> dict[str, int]:
    """Every study's expired data removed (the background worker's periodic pass): study -> items."""
    with session_scope(engine) as session:
        names = [s.name for s in session.exec(select(Study).order_by(Study.id)).all()
                 if study_settings(s).retention]
    return {name: apply_expired(engine, name, expired(engine, name, now), data_root) for name in names}


def _drop_identifiers(engine, item: Expired) -> None:
    model = {"participant": Participant, "annotator": Annotator, "connection_check": ConnectionCheck}[item.subject]
    with session_scope(engine) as session:
        row = session.get(model, item.row_id)
        if row is None:  # erased meanwhile
            return
        if item.subject == "participant":
            session.exec(sa.update(ConnectionCheck).where(
                ConnectionCheck.study_id == row.study_id, ConnectionCheck.external_id == row.external_id)
                .values(external_id=None))
            row.external_id = None
        elif item.subject == "annotator":
            row.external_id = row.prolific_session_id = row.prolific_study_id = None
        else:
            row.external_id = None
        session.add(row)


def _drop_recordings(engine, participant_id: int, root: Path) -> None:
    """The participant's audio and transcripts: session folders but the network log, recordings,
    clips' audio, the words of the cached voice activity."""
    with session_scope(engine) as session:
        sessions = session.exec(select(ConversationSession.id).where(
            ConversationSession.participant_id == participant_id)).all()
        recordings = session.exec(select(Recording).where(Recording.session_id.in_(sessions))).all()
        ids = [r.id for r in recordings]
        clips = session.exec(select(DialogueClip).where(DialogueClip.recording_id.in_(ids))).all()
        clip_paths = [c.audio_path for c in clips if c.audio_path]
        for clip in clips:  # the clip's voice activity (a measure) stays; its audio goes
            clip.recording_id, clip.audio_path, clip.audio_sha256 = None, None, None
            session.add(clip)
        session.flush()
        session.exec(sa.delete(Recording).where(Recording.id.in_(ids)))
        for result in session.exec(select(AnalysisResult).where(
                AnalysisResult.subject.in_([f"session:{i}" for i in sessions]))).all():
            result.result = _without_words(result.result)
            session.add(result)
    for session_id in sessions:
        folder = resolve(session_dir(session_id), root)
        for path in folder.glob("*") if folder.is_dir() else []:
            if path.name != NETWORK_FILE:
                shutil.rmtree(path) if path.is_dir() else path.unlink()
    for relpath in clip_paths:
        resolve(relpath, root).unlink(missing_ok=True)


def _without_words(result):
    """A cached result with every list of words emptied (voice activity keeps its segments)."""
    if isinstance(result, dict):
        return {k: ([] if k == "words" else _without_words(v)) for k, v in result.items()}
    if isinstance(result, list):
        return [_without_words(v) for v in result]
    return result

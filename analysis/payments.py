"""The payments table: the one place Prolific IDs leave the app, asked for explicitly.

Every view, report and dataset export names participants by pseudonym and annotators as
`annotator-N`; paying them (and answering a participant's request) needs their Prolific IDs, so
this table puts each pseudonym beside its Prolific ID, completion code and time taken:

    python -m analysis payments --study NAME --out payments.csv   (written mode 0600)
    (and the researcher area's "Payments table" button, on the Participants' data tab)

    kind         participant, annotator, or could not connect (a Prolific ID whose connection
                 checks all failed before consent: shown the study's could_not_take_part_code;
                 named by its last check, `check-N`, as it has no pseudonym)
    pseudonym    as the views and exports name them
    prolific_id  None once the study's retention dropped it (studies.retention)
    completion_code, status (completed, not finished, could not take part), started_at,
    time_taken_s (a participant: consent to the end of their last call; an annotator: the link's
                 first use to completion; None while there is no end)
"""

from __future__ import annotations

import os
from datetime import timezone
from pathlib import Path

import pandas as pd
import sqlalchemy as sa
from sqlmodel import Session, select

from storage.erasure import annotator_pseudonym
from storage.models import Annotator, ConnectionCheck, ConversationSession, Participant
from storage.records import get_study
from studies.config import stored_settings

PAYMENT_COLUMNS = ["kind", "pseudonym", "prolific_id", "completion_code", "status", "started_at", "time_taken_s"]
COMPLETED, NOT_FINISHED, COULD_NOT = "completed", "not finished", "could not take part"


def payments_table(engine, study_name: str) -> pd.DataFrame:
    """One row per participant, annotator and Prolific ID that could not connect, of the study
    (storage.records.NotFound, a LookupError, for an unknown study)."""
    rows = []
    with Session(engine) as session:
        study = get_study(session, study_name)
        last_end = (select(ConversationSession.participant_id, sa.func.max(ConversationSession.ended_at).label("end"))
                    .group_by(ConversationSession.participant_id).subquery())
        for participant, end in session.exec(
                select(Participant, last_end.c.end).outerjoin(last_end, last_end.c.participant_id == Participant.id)
                .where(Participant.study_id == study.id).order_by(Participant.id)).all():
            start = participant.consent_at or participant.created_at
            status = COMPLETED if participant.completion_code else NOT_FINISHED
            rows.append(_row("participant", participant.pseudonym, participant.external_id,
                             participant.completion_code, status, start, _aware(end)))
        for annotator in session.exec(select(Annotator).where(Annotator.study_id == study.id)
                                      .order_by(Annotator.id)).all():
            status = COMPLETED if annotator.completed_at or annotator.completion_code else NOT_FINISHED
            rows.append(_row("annotator", annotator_pseudonym(annotator.id), annotator.external_id,
                             annotator.completion_code, status, annotator.created_at, annotator.completed_at))
        code = stored_settings(study.name, study.title or "", study.config).could_not_take_part_code
        known = set(session.exec(select(Participant.external_id).where(Participant.study_id == study.id)).all())
        for external_id, check_id, first in _never_connected(session, study.id):
            if external_id not in known:  # one who connected later is a participant above
                rows.append(_row("could not connect", f"check-{check_id}", external_id, code, COULD_NOT, first, None))
    return pd.DataFrame(rows, columns=PAYMENT_COLUMNS)


def _never_connected(session: Session, study_id: int) -> list[tuple]:
    """(Prolific ID, its last check's id, its first check's time) of each one whose connection
    checks all failed."""
    checks = session.exec(select(ConnectionCheck.external_id, ConnectionCheck.id, ConnectionCheck.outcome,
                                 ConnectionCheck.created_at)
                          .where(ConnectionCheck.study_id == study_id, ConnectionCheck.external_id.is_not(None))
                          .order_by(ConnectionCheck.id)).all()
    outcomes, last, first = {}, {}, {}
    for external_id, check_id, outcome, created_at in checks:
        outcomes.setdefault(external_id, set()).add(outcome)
        last[external_id] = check_id
        first.setdefault(external_id, _aware(created_at))
    return [(e, last[e], first[e]) for e, seen in outcomes.items() if "failed" in seen and "ok" not in seen]


def write_payments(table: pd.DataFrame, path) -> Path:
    """The table as CSV at `path`, readable by its owner only from its first byte."""
    path = Path(path)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)  # a file that was there keeps its old mode through O_CREAT
    with os.fdopen(fd, "w", newline="") as out:
        table.to_csv(out, index=False)
    return path


def _aware(moment):
    """A database's max() of a UTC column may come back without its zone (SQLite)."""
    return moment.replace(tzinfo=timezone.utc) if moment is not None and moment.tzinfo is None else moment


def _row(kind: str, pseudonym: str, prolific_id, code, status: str, start, end) -> dict:
    start, end = _aware(start), _aware(end)
    return {"kind": kind, "pseudonym": pseudonym, "prolific_id": prolific_id, "completion_code": code,
            "status": status, "started_at": start.isoformat(timespec="seconds") if start else None,
            "time_taken_s": round((end - start).total_seconds(), 1) if start and end else None}

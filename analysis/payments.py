"""The payments table: the one place Prolific IDs leave the app, asked for explicitly.

Every view, report and dataset export names participants by pseudonym and annotators as
`annotator-N`; paying them (and answering a participant's request) needs their Prolific IDs, so
this table puts each pseudonym beside its Prolific ID, completion code and time taken:

    python -m analysis payments --study NAME --out payments.csv
    (and the researcher area's "Payments table" button, on the Participants' data tab)

    kind         participant or annotator
    pseudonym    as the views and exports name them
    prolific_id  None once the study's retention dropped it (studies.retention)
    completion_code, finished (whether they got it), started_at, time_taken_s (a participant:
    consent to the end of their last call; an annotator: the link's first use to completion)
"""

from __future__ import annotations

from datetime import timezone

import pandas as pd
import sqlalchemy as sa
from sqlmodel import Session, select

from storage.erasure import annotator_pseudonym
from storage.models import Annotator, ConversationSession, Participant
from storage.records import get_study

PAYMENT_COLUMNS = ["kind", "pseudonym", "prolific_id", "completion_code", "finished", "started_at", "time_taken_s"]


def payments_table(engine, study_name: str) -> pd.DataFrame:
    """One row per participant and annotator of the study (NotFound for an unknown study)."""
    rows = []
    with Session(engine) as session:
        study = get_study(session, study_name)
        last_end = (select(ConversationSession.participant_id, sa.func.max(ConversationSession.ended_at).label("end"))
                    .group_by(ConversationSession.participant_id).subquery())
        for participant, end in session.exec(
                select(Participant, last_end.c.end).outerjoin(last_end, last_end.c.participant_id == Participant.id)
                .where(Participant.study_id == study.id).order_by(Participant.id)).all():
            start = participant.consent_at or participant.created_at
            rows.append(_row("participant", participant.pseudonym, participant.external_id,
                             participant.completion_code, start, _aware(end)))
        for annotator in session.exec(select(Annotator).where(Annotator.study_id == study.id)
                                      .order_by(Annotator.id)).all():
            rows.append(_row("annotator", annotator_pseudonym(annotator.id), annotator.external_id,
                             annotator.completion_code, annotator.created_at, annotator.completed_at))
    return pd.DataFrame(rows, columns=PAYMENT_COLUMNS)


def _aware(moment):
    """A database's max() of a UTC column may come back without its zone (SQLite)."""
    return moment.replace(tzinfo=timezone.utc) if moment is not None and moment.tzinfo is None else moment


def _row(kind: str, pseudonym: str, prolific_id, code, start, end) -> dict:
    return {"kind": kind, "pseudonym": pseudonym, "prolific_id": prolific_id, "completion_code": code,
            "finished": code is not None, "started_at": start.isoformat(timespec="seconds") if start else None,
            "time_taken_s": round((end - start).total_seconds(), 1) if start and end else None}

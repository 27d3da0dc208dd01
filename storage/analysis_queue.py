"""The background analysis queue: which studies need their cached results brought up to date, who
is computing them and how far they are (the `analysis_request` table, one row per study).

    request_analysis(session, study_id)          # a call ended, clips arrived: in the same transaction
    study_id = claim_study(engine, worker)        # a worker takes one (None: nothing to do)
    report_progress(engine, study_id, worker, "judge metrics", 40, 100)   # also its heartbeat
    finish_study(engine, study_id, worker)
    analysis_state(engine, study_id)              # what a view shows: queued, computing 40/100, ...

Several workers (in several processes, on several machines) share one database: a study is
claimed by one UPDATE, so exactly one computes it; a worker that stops heartbeating for `LEASE_S`
has its study taken over. A request that arrives during a pass moves `requested_at` past the
pass's start, so the study is computed once more afterwards and nothing is missed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

import sqlalchemy as sa
from sqlmodel import Session, select

from storage.db import session_scope
from storage.models import (
    AnalysisRequest,
    ConversationSession,
    DialogueSystem,
    Study,
    utc_now,
)
from storage.records import _insert

HEARTBEAT_S = 2.0  # a working worker reports at least this often
LEASE_S = 30.0  # a study whose worker was silent this long is taken over (a stage item can take seconds)


def request_analysis(session: Session, study_id: int) -> None:
    """Mark the study's cached analysis as out of date (in the caller's transaction)."""
    now = utc_now()
    statement = _insert(session, AnalysisRequest).values(study_id=study_id, requested_at=now, stage="", done=0,
                                                          total=0)
    session.exec(statement.on_conflict_do_update(index_elements=["study_id"], set_={"requested_at": now}))


def request_for_session(session: Session, conversation: ConversationSession) -> None:
    system = session.get(DialogueSystem, conversation.system_id)
    if system is not None:
        request_analysis(session, system.study_id)


def request_all(engine) -> list[int]:
    """Queue every study (a worker starting on a database filled without it)."""
    with session_scope(engine) as session:
        ids = list(session.exec(select(Study.id)))
        for study_id in ids:
            request_analysis(session, study_id)
    return ids


def _wanted(now: datetime, lease_s: float):
    """Idle and requested since its last pass started, or left half-done by a worker that died."""
    stale = now - timedelta(seconds=lease_s)
    return sa.or_(
        sa.and_(AnalysisRequest.worker.is_(None),
                sa.or_(AnalysisRequest.started_at.is_(None), AnalysisRequest.requested_at >= AnalysisRequest.started_at)),
        sa.and_(AnalysisRequest.worker.is_not(None), AnalysisRequest.heartbeat_at < stale),
    )


def claim_study(engine, worker: str, lease_s: float = LEASE_S) -> int | None:
    """Take the longest-waiting study that needs a pass; None when there is none."""
    now = utc_now()
    with session_scope(engine) as session:
        candidates = list(session.exec(select(AnalysisRequest.study_id).where(_wanted(now, lease_s))
                                       .order_by(AnalysisRequest.requested_at)))
        for study_id in candidates:
            claimed = session.execute(
                sa.update(AnalysisRequest)
                .where(AnalysisRequest.study_id == study_id, _wanted(now, lease_s))
                .values(worker=worker, heartbeat_at=now, started_at=now, stage="", stage_started_at=now,
                        done=0, total=0, error=None)
            ).rowcount == 1
            if claimed:
                return study_id
    return None


def report_progress(engine, study_id: int, worker: str, stage: str, done: int, total: int,
                    stage_started_at: datetime | None = None) -> bool:
    """Record how far the worker is (and that it is alive); False when the study was taken from it."""
    values = {"heartbeat_at": utc_now(), "stage": stage, "done": done, "total": total}
    if stage_started_at is not None:
        values["stage_started_at"] = stage_started_at
    with session_scope(engine) as session:
        return session.execute(
            sa.update(AnalysisRequest)
            .where(AnalysisRequest.study_id == study_id, AnalysisRequest.worker == worker)
            .values(**values)
        ).rowcount == 1


def finish_study(engine, study_id: int, worker: str, error: str | None = None) -> None:
    with session_scope(engine) as session:
        session.execute(
            sa.update(AnalysisRequest)
            .where(AnalysisRequest.study_id == study_id, AnalysisRequest.worker == worker)
            .values(worker=None, finished_at=utc_now(), stage="", done=0, total=0, error=error)
        )


@dataclass(frozen=True)
class AnalysisState:
    """What a view says about the study's background analysis."""

    status: str  # "idle" (nothing asked), "queued", "computing", "done" or "failed"
    stage: str = ""
    done: int = 0
    total: int = 0
    eta_s: float | None = None  # of the current stage, from its pace so far
    error: str | None = None
    finished_at: datetime | None = None

    @property
    def busy(self) -> bool:
        return self.status in ("queued", "computing")

    def describe(self) -> str:
        if self.status == "computing":
            count = f" {self.done} of {self.total}" if self.total else ""
            eta = f", about {self.eta_s:.0f} s left" if self.eta_s is not None else ""
            return f"Computing in the background: {self.stage or 'starting'}{count}{eta}."
        if self.status == "queued":
            return "Queued for the background worker."
        if self.status == "failed":
            return f"The background analysis failed: {self.error}"
        return ""


def analysis_state(engine, study_id: int, lease_s: float = LEASE_S) -> AnalysisState:
    now = utc_now()
    with session_scope(engine) as session:
        row = session.get(AnalysisRequest, study_id)
        if row is None:
            return AnalysisState("idle")
        alive = row.worker is not None and row.heartbeat_at is not None and \
            row.heartbeat_at >= now - timedelta(seconds=lease_s)
        if alive:
            eta = None
            if row.total and row.done and row.stage_started_at is not None:
                pace = (now - row.stage_started_at).total_seconds() / row.done
                eta = pace * (row.total - row.done)
            return AnalysisState("computing", row.stage, row.done, row.total, eta)
        if row.worker is not None or row.started_at is None or row.requested_at >= row.started_at:
            return AnalysisState("queued")  # (a worker that died is taken over)
        if row.error:
            return AnalysisState("failed", error=row.error, finished_at=row.finished_at)
        return AnalysisState("done", finished_at=row.finished_at)

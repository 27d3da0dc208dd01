"""Which trial an annotator gets next: K distinct judges per pair, balanced, safe under concurrency.

The guarantees live in the database (table `assignment`, see storage.models.Assignment):
UNIQUE(pair, slot) with slots 0..K-1 means no pair can get more than K judges, UNIQUE(pair,
annotator) that nobody sees a pair twice, UNIQUE(annotator, position) that one annotator cannot
claim two trials at the same time (two tabs). Claims are taken inside a write transaction: on
SQLite every transaction is BEGIN IMMEDIATE (storage.db), on PostgreSQL the study's row is locked
FOR UPDATE, so claims of one study queue up instead of racing. A claim that is not judged before
it expires is given to the next annotator who needs a pair (its row is deleted then, not before:
the first annotator can still finish it until someone else needs the slot).

An annotator's erasure (storage.erasure: withdrawn, or erased by a researcher) deletes their
trials, done or claimed, under the same lock: their slots come free and go to the next annotators
who need a pair, so every pair still ends with exactly K judges. Answers, skips and practice take
the lock shared (annotation.trials.hold_study), so none lands for an annotator being erased.

Balance: a new claim always goes to a pair with the fewest live judges (done + unexpired claims)
among those this annotator has not seen, ties broken at random.

Attention checks (pairs with is_attention_check) have no slot: every annotator gets each of them
once, one at a random place within each block of `attention_every` trials.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import asdict, dataclass, fields
from datetime import datetime, timedelta

import sqlalchemy as sa
from sqlmodel import Session, select

from storage.models import SIDES, Annotator, Assignment, ClipPair, SkippedTrial, Study, utc_now


@dataclass(frozen=True)
class AssignmentSettings:
    judgments_per_pair: int = 3  # K
    trials_per_annotator: int = 20  # formal and artifact-control trials (attention checks come on top)
    attention_every: int = 5  # one attention check somewhere in each block of this many trials
    claim_timeout_s: float = 900.0  # an unjudged claim may go to someone else after this
    # every /next renews a claim by claim_timeout_s, but never past this long after it was made:
    # otherwise an annotator (or a script) polling /next holds a slot forever
    claim_max_s: float = 3600.0
    practice_trials: int = 2

    def __post_init__(self):
        for f in fields(self):
            value = getattr(self, f.name)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"annotation setting {f.name} must be a positive number, got {value!r}")


def settings_for(study: Study) -> AssignmentSettings:
    """The study's settings: `config["annotation"]`, defaults for what it leaves out."""
    given = dict((study.config or {}).get("annotation", {}))
    known = {f.name for f in fields(AssignmentSettings)}
    return AssignmentSettings(**{k: v for k, v in given.items() if k in known})


def settings_dict(settings: AssignmentSettings) -> dict:
    return asdict(settings)


def lock_study(session: Session, study_id: int, shared: bool = False) -> None:
    """Serialise claims within one study. SQLite: the BEGIN IMMEDIATE of storage.db already did.

    `shared` (FOR SHARE): answers, skips and practice run beside each other but not beside a claim
    or an erasure (storage.erasure takes this row FOR UPDATE before it lists what it deletes)."""
    if session.get_bind().dialect.name == "postgresql":
        session.exec(select(Study.id).where(Study.id == study_id).with_for_update(read=shared))


def _live(now: datetime):
    """An assignment that still holds its slot: judged, or claimed and not expired."""
    return sa.or_(Assignment.status == "done", Assignment.expires_at > now)


def open_claim(session: Session, annotator: Annotator) -> Assignment | None:
    """The annotator's claimed, not yet judged trial (expired or not), if any."""
    return session.exec(
        select(Assignment)
        .where(Assignment.annotator_id == annotator.id, Assignment.status == "claimed")
        .order_by(Assignment.position)
    ).first()


def seen_pairs(annotator: Annotator):
    """The pairs this annotator had (a trial, done or claimed) or skipped: never offered again."""
    return sa.union(
        select(Assignment.clip_pair_id).where(Assignment.annotator_id == annotator.id),
        select(SkippedTrial.clip_pair_id).where(SkippedTrial.annotator_id == annotator.id),
    )


def annotator_counts(session: Session, annotator: Annotator) -> dict:
    """How many trials the annotator holds, by kind and status."""
    rows = session.exec(
        select(Assignment.slot.is_(None), Assignment.status, sa.func.count())
        .where(Assignment.annotator_id == annotator.id)
        .group_by(Assignment.slot.is_(None), Assignment.status)
    ).all()
    counts = {"formal": 0, "attention": 0, "done": 0}
    for is_attention, status, n in rows:
        counts["attention" if is_attention else "formal"] += n
        if status == "done":
            counts["done"] += n
    return counts


def _attention_offset(annotator: Annotator, block: int, every: int) -> int:
    """Where in block `block` this annotator's attention check goes: fixed per annotator, random-looking."""
    digest = hashlib.sha256(f"{annotator.study_id}:{annotator.id}:{block}".encode()).digest()
    return digest[0] % every


def _unseen_attention_pair(session: Session, annotator: Annotator) -> ClipPair | None:
    seen = seen_pairs(annotator)
    return session.exec(
        select(ClipPair)
        .where(
            ClipPair.study_id == annotator.study_id,
            ClipPair.is_attention_check,
            ClipPair.id.not_in(seen),
        )
        .order_by(ClipPair.id)
    ).first()


def _least_judged_pairs(session: Session, annotator: Annotator, k: int, now: datetime) -> list[tuple[int, int]]:
    """(pair id, live judges) of the pairs this annotator may still get, fewest judges first."""
    live = (
        select(Assignment.clip_pair_id, sa.func.count().label("n"))
        .where(_live(now), Assignment.slot.is_not(None))
        .group_by(Assignment.clip_pair_id)
        .subquery()
    )
    seen = seen_pairs(annotator)
    n = sa.func.coalesce(live.c.n, 0)
    rows = session.exec(
        select(ClipPair.id, n)
        .outerjoin(live, live.c.clip_pair_id == ClipPair.id)
        .where(
            ClipPair.study_id == annotator.study_id,
            sa.not_(ClipPair.is_attention_check),
            sa.not_(ClipPair.is_practice),
            ClipPair.id.not_in(seen),
            n < k,
        )
        .order_by(n)
    ).all()
    return [(pair_id, count) for pair_id, count in rows]


def _free_slot(session: Session, pair_id: int, k: int, now: datetime) -> int | None:
    """The lowest slot of the pair nobody holds, after dropping expired claims on it."""
    session.exec(
        sa.delete(Assignment).where(
            Assignment.clip_pair_id == pair_id, Assignment.status == "claimed", Assignment.expires_at <= now
        )
    )
    used = set(session.exec(select(Assignment.slot).where(Assignment.clip_pair_id == pair_id)).all())
    free = [s for s in range(k) if s not in used]
    return free[0] if free else None


def _claim(session, annotator, pair_id, slot, settings, now, rng) -> Assignment:
    last = session.exec(
        select(sa.func.max(Assignment.position)).where(Assignment.annotator_id == annotator.id)
    ).one()
    assignment = Assignment(
        clip_pair_id=pair_id,
        annotator_id=annotator.id,
        slot=slot,
        position=(last or 0) + 1,
        natural_side=rng.choice(SIDES),
        claimed_at=now,
        expires_at=now + timedelta(seconds=settings.claim_timeout_s),
    )
    session.add(assignment)
    session.flush()
    return assignment


def next_assignment(
    session: Session,
    annotator: Annotator,
    settings: AssignmentSettings,
    now: datetime | None = None,
    rng: random.Random | None = None,
) -> Assignment | None:
    """The annotator's current trial: the open claim (its expiry renewed, up to claim_max_s after
    it was made) or a new one; None when
    the annotator has nothing left to do. Call inside a transaction; the caller commits."""
    now = now or utc_now()
    rng = rng or random.SystemRandom()
    lock_study(session, annotator.study_id)
    claim = open_claim(session, annotator)
    if claim is not None:
        hard_end = claim.claimed_at + timedelta(seconds=settings.claim_max_s)
        claim.expires_at = max(claim.expires_at, min(now + timedelta(seconds=settings.claim_timeout_s), hard_end))
        session.add(claim)
        session.flush()
        return claim

    counts = annotator_counts(session, annotator)
    every = settings.attention_every
    block = counts["attention"]
    blocks = -(-settings.trials_per_annotator // every)  # one check per block of the annotator's quota
    due = block < blocks and counts["formal"] >= block * every + _attention_offset(annotator, block, every)
    if due:
        attention = _unseen_attention_pair(session, annotator)
        if attention is not None:
            return _claim(session, annotator, attention.id, None, settings, now, rng)

    if counts["formal"] >= settings.trials_per_annotator:
        return None
    candidates = _least_judged_pairs(session, annotator, settings.judgments_per_pair, now)
    while candidates:
        fewest = candidates[0][1]
        tied = [pair_id for pair_id, n in candidates if n == fewest]
        pair_id = rng.choice(tied)
        slot = _free_slot(session, pair_id, settings.judgments_per_pair, now)
        if slot is not None:
            return _claim(session, annotator, pair_id, slot, settings, now, rng)
        candidates = [(p, n) for p, n in candidates if p != pair_id]
    return None


def planned_trials(session: Session, annotator: Annotator, settings: AssignmentSettings, counts: dict | None = None) -> int:
    """How many trials the annotator will do in all, for the progress bar (an upper bound while
    pairs remain; once nothing is left, exactly the trials held). `counts`: annotator_counts."""
    counts = counts or annotator_counts(session, annotator)
    attention_pairs = session.exec(
        select(sa.func.count()).where(ClipPair.study_id == annotator.study_id, ClipPair.is_attention_check)
    ).one()
    formal = max(settings.trials_per_annotator, counts["formal"])
    checks = min(attention_pairs, -(-formal // settings.attention_every))
    return formal + max(checks, counts["attention"])


def pairs_still_open(session: Session, annotator: Annotator, settings: AssignmentSettings) -> int:
    """Pairs this annotator could still judge once other people's claims expire: not seen by
    them, fewer than K finished judgments. 0 means nothing can come their way any more."""
    done = (
        select(Assignment.clip_pair_id, sa.func.count().label("n"))
        .where(Assignment.status == "done", Assignment.slot.is_not(None))
        .group_by(Assignment.clip_pair_id)
        .subquery()
    )
    seen = seen_pairs(annotator)
    return session.exec(
        select(sa.func.count())
        .select_from(ClipPair)
        .outerjoin(done, done.c.clip_pair_id == ClipPair.id)
        .where(
            ClipPair.study_id == annotator.study_id,
            sa.not_(ClipPair.is_attention_check),
            sa.not_(ClipPair.is_practice),
            ClipPair.id.not_in(seen),
            sa.func.coalesce(done.c.n, 0) < settings.judgments_per_pair,
        )
    ).one()


def open_slots(session: Session, study_id: int, settings: AssignmentSettings, now: datetime | None = None) -> int:
    """Judgments the study's formal pairs can still take: K per pair minus those done or held by
    an unexpired claim. Each new annotator needs at least one to have any work."""
    now = now or utc_now()
    live = (
        select(Assignment.clip_pair_id, sa.func.count().label("n"))
        .where(_live(now), Assignment.slot.is_not(None))
        .group_by(Assignment.clip_pair_id)
        .subquery()
    )
    n = sa.func.coalesce(live.c.n, 0)
    return int(session.exec(
        select(sa.func.coalesce(sa.func.sum(settings.judgments_per_pair - n), 0))
        .select_from(ClipPair)
        .outerjoin(live, live.c.clip_pair_id == ClipPair.id)
        .where(ClipPair.study_id == study_id, sa.not_(ClipPair.is_attention_check), sa.not_(ClipPair.is_practice),
               n < settings.judgments_per_pair)
    ).one())

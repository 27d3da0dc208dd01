"""The annotator's way through a study: token check, practice, trials one at a time, judgments,
completion. Plain functions on an open Session (the caller commits); annotation.api wraps them
in HTTP routes, which the browser page and the simulated annotators both use.

State lives only in the database, so closing the tab and opening the link again resumes where
the annotator was: the open trial (same clips, same sides) or the next one.

An annotator may withdraw at any time (annotation.api's /withdraw runs storage.erasure): every
judgment and trial of theirs is deleted, their slots go to other annotators, and their token
stops working.
"""

from __future__ import annotations

import hashlib
import math
import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

import sqlalchemy as sa
from sqlmodel import Session, select

from annotation.assignment import (
    AssignmentSettings,
    annotator_counts,
    lock_study,
    next_assignment,
    open_claim,
    pairs_still_open,
    planned_trials,
    settings_for,
)
from storage.erasure import erased_before, erased_in_any_study
from storage.models import (
    Annotator,
    Assignment,
    ClipPair,
    DialogueClip,
    Judgment,
    SkippedTrial,
    Study,
    utc_now,
)
from storage.records import hash_token, record_judgment, study_by_name

RATINGS = (1, 2, 3, 4, 5)
# A clip counts as played to the end when this much of it (minus a little timer slack) was heard.
LISTEN_SLACK_S = 0.25
LISTEN_SHARE = 0.97
WAIT_RETRY_S = 5.0
SKIP_REASON_MAX = 500
PROLIFIC_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class TrialError(ValueError):
    """A request the annotator area refuses; `status` is the HTTP status to answer with."""

    status = 400


class AccessDenied(TrialError):
    status = 403


class UnknownStudy(TrialError):
    status = 404


class AlreadyAnswered(TrialError):
    status = 409


class Removed(TrialError):
    """The annotator's data was erased (they withdrew, or a researcher erased them)."""

    status = 410


REMOVED = "you are no longer in this study: you withdrew or were removed, and your answers were deleted"


# Who is asking


def authenticate(session: Session, token: str | None, now: datetime | None = None) -> Annotator:
    if not token or not isinstance(token, str):
        raise AccessDenied("missing annotator token: open the link you were given")
    try:
        digest = hash_token(token)
    except UnicodeEncodeError:  # a lone surrogate from JSON ("\ud800") is no token
        raise AccessDenied("unknown annotator token: the link is mistyped or was changed") from None
    annotator = session.exec(select(Annotator).where(Annotator.token_hash == digest)).first()
    if annotator is None:
        if erased_in_any_study(session, "annotator", digest) is not None:  # the erasure kept its hash, salted
            raise Removed(REMOVED)
        raise AccessDenied("unknown annotator token: the link is mistyped or was changed")
    now = now or utc_now()
    if annotator.expires_at is not None and annotator.expires_at <= now:
        raise AccessDenied(f"this annotator link expired on {annotator.expires_at:%Y-%m-%d %H:%M} UTC")
    return annotator


def hold_study(session: Session, annotator: Annotator, shared: bool = False) -> None:
    """Lock the annotator's study (annotation.assignment.lock_study) and check that they are still
    in it: an erasure deletes them under the same lock, so a request that found them just before
    must not store a judgment, skip or claim for them after it (PostgreSQL; on SQLite every
    transaction is BEGIN IMMEDIATE, so the token check itself came after the erasure). Removed (410)."""
    lock_study(session, annotator.study_id, shared=shared)
    if session.exec(select(Annotator.id).where(Annotator.id == annotator.id)).first() is None:
        raise Removed(REMOVED)


def get_study(session: Session, name: str) -> Study:
    """The study called `name`; UnknownStudy (404, the name cut to 200 characters) when there is none."""
    study = study_by_name(session, name)
    if study is None:
        raise UnknownStudy(f"no study named {name[:200]!r}")
    return study


def create_annotators(
    session: Session, study: Study, count: int, valid_for: timedelta | None = None, now: datetime | None = None
) -> list[str]:
    """`count` new annotators; returns their tokens (only the hashes are stored)."""
    if count < 1:
        raise TrialError(f"annotator count must be at least 1, got {count}")
    now = now or utc_now()
    tokens = []
    for _ in range(count):
        token = secrets.token_urlsafe(24)
        expires = now + valid_for if valid_for is not None else None
        session.add(Annotator(study_id=study.id, token_hash=hash_token(token), expires_at=expires))
        tokens.append(token)
    session.flush()
    return tokens


def prolific_entry(session: Session, study_name: str, pid: str, study_id: str, session_id: str) -> str:
    """A token for the Prolific participant `pid` in the study (created on first arrival).

    The token is replaced at each arrival (only its hash is stored, so the old one cannot be
    handed out again); the annotator row, and so their progress, stays the same.
    """
    for name, value in (("PROLIFIC_PID", pid), ("STUDY_ID", study_id), ("SESSION_ID", session_id)):
        if not isinstance(value, str) or not PROLIFIC_ID.match(value):
            raise TrialError(f"{name} is missing or not a Prolific id (letters, digits, - and _)")
    study = get_study(session, study_name)
    expected = (study.config or {}).get("annotation", {}).get("prolific_study_id")
    if not expected:  # else anyone could create annotators (and take every slot) with made-up ids
        raise AccessDenied(f"study {study_name!r} takes no Prolific arrivals (no Prolific STUDY_ID is configured)")
    if study_id != expected:
        raise AccessDenied(f"STUDY_ID {study_id} does not belong to study {study_name!r}")
    lock_study(session, study.id)  # two arrivals of the same PID must not both create a row
    token = secrets.token_urlsafe(24)
    annotator = session.exec(
        select(Annotator).where(Annotator.study_id == study.id, Annotator.external_id == pid)
    ).first()
    if annotator is None and erased_before(session, study.id, "annotator", pid) is not None:
        raise Removed(REMOVED)  # not enrolled again: their withdrawal stands
    if annotator is None:
        annotator = Annotator(study_id=study.id, external_id=pid, token_hash=hash_token(token))
    annotator.token_hash = hash_token(token)
    annotator.prolific_study_id = study_id
    annotator.prolific_session_id = session_id
    session.add(annotator)
    session.flush()
    return token


# Leaving the study


def withdrawal_answer(study: Study) -> dict:
    """What the page shows one who withdrew: the study's withdrawn code and its link, `{code}` in
    the link replaced (the study file's withdrawn_code / withdrawn_url, studies.config), when set."""
    config = study.config or {}
    code, url = config.get("withdrawn_code"), config.get("withdrawn_url")
    answer = {"withdrawn": True}
    if code:
        answer["withdrawn_code"] = code
    if url:
        answer["withdrawn_url"] = url.replace("{code}", code or "")
    return answer


# What the annotator sees


def _clips(session: Session, pair: ClipPair, natural_side: str) -> dict[str, DialogueClip]:
    natural = session.get(DialogueClip, pair.natural_clip_id)
    perturbed = session.get(DialogueClip, pair.perturbed_clip_id)
    return {"A": natural, "B": perturbed} if natural_side == "A" else {"A": perturbed, "B": natural}


def practice_pairs(session: Session, study_id: int) -> list[ClipPair]:
    return list(
        session.exec(select(ClipPair).where(ClipPair.study_id == study_id, ClipPair.is_practice).order_by(ClipPair.id))
    )


def practice_side(annotator: Annotator, pair: ClipPair) -> str:
    """The practice pair's natural side for this annotator: fixed, so a reload shows the same."""
    return "AB"[hashlib.sha256(f"{annotator.id}:{pair.id}".encode()).digest()[0] % 2]


# Time to answer once both clips are heard (a choice and two ratings); what the page adds to the
# clips' length when it tells the annotator how long a trial takes.
ANSWER_S = 15.0


def clip_seconds(session: Session, study_id: int) -> float:
    """The median length of the study's clips (0 when it has none)."""
    durations = sorted(session.exec(select(DialogueClip.duration_s).where(DialogueClip.study_id == study_id)).all())
    return float(durations[len(durations) // 2]) if durations else 0.0


def clip_length_range(session: Session, study_id: int) -> tuple[int, int] | None:
    """The shortest and the longest of the study's clips in whole seconds, rounded outwards so
    that every clip lies within them (None when it has none): what the annotator is told."""
    shortest, longest = session.exec(
        select(sa.func.min(DialogueClip.duration_s), sa.func.max(DialogueClip.duration_s))
        .where(DialogueClip.study_id == study_id)
    ).one()
    if shortest is None:
        return None
    return math.floor(shortest), math.ceil(longest)


def progress(session: Session, annotator: Annotator, settings: AssignmentSettings) -> dict:
    """Trials done and planned, how long the clips are and about how long one trial takes (both
    clips heard, then answered)."""
    counts = annotator_counts(session, annotator)
    clip_s = clip_seconds(session, annotator.study_id)
    return {"done": counts["done"], "total": max(counts["done"], planned_trials(session, annotator, settings, counts)),
            "clip_range_s": clip_length_range(session, annotator.study_id), "trial_s": round(2 * clip_s + ANSWER_S)}


def _complete(session: Session, annotator: Annotator, study: Study, now: datetime) -> dict:
    if annotator.completed_at is None:
        annotator.completed_at = now
        fixed = (study.config or {}).get("annotation", {}).get("completion_code")
        annotator.completion_code = fixed or secrets.token_hex(4).upper()
        session.add(annotator)
        session.flush()
    state = {"status": "complete", "completion_code": annotator.completion_code}
    redirect = (study.config or {}).get("annotation", {}).get("completion_url")
    if redirect:
        state["completion_url"] = redirect
    return state


def _no_work(annotator: Annotator, study: Study) -> dict:
    """Nothing to judge for someone who has judged nothing: no completion code (that would pay
    for no work); a Prolific arrival is asked to return the study, with the study's no-work code
    when one is configured (Prolific can map such a code to "return the submission")."""
    options = (study.config or {}).get("annotation", {})
    state = {"status": "no_work", "prolific": annotator.prolific_study_id is not None}
    if state["prolific"] and options.get("no_work_code") and options.get("completion_url"):
        state["return_url"] = options["completion_url"].replace("{code}", options["no_work_code"])
    return state


def has_no_work(session: Session, annotator: Annotator, settings: AssignmentSettings) -> bool:
    """True when the annotator judged nothing yet, holds no trial and no pair can come their way."""
    return (annotator_counts(session, annotator)["done"] == 0 and open_claim(session, annotator) is None
            and pairs_still_open(session, annotator, settings) == 0)


def current_state(session: Session, annotator: Annotator, now: datetime | None = None, rng=None) -> dict:
    """What the annotator does now: practice, a trial, wait, done (with the completion code), or
    no work (nothing to judge before any trial: no code)."""
    now = now or utc_now()
    hold_study(session, annotator)  # before anything is read: a claim may follow
    study = session.get(Study, annotator.study_id)
    settings = settings_for(study)
    if annotator.completed_at is not None:
        return {**_complete(session, annotator, study, now), "progress": progress(session, annotator, settings)}
    if has_no_work(session, annotator, settings):
        return _no_work(annotator, study)
    practice = practice_pairs(session, study.id) if annotator.practice_done_at is None else []
    if practice:
        trials = []
        for n, pair in enumerate(practice):
            side = practice_side(annotator, pair)
            clips = _clips(session, pair, side)
            trials.append({
                "practice": n,
                "audio": {s: f"/api/annotate/practice/{n}/{s}" for s in "AB"},
                "durations": {s: clips[s].duration_s for s in "AB"},
                "natural_side": side,  # practice answers get feedback; they are not stored
                "ask_artifact": False,
            })
        return {"status": "practice", "practice": trials, "progress": progress(session, annotator, settings)}

    assignment = next_assignment(session, annotator, settings, now=now, rng=rng)
    if assignment is not None:
        pair = session.get(ClipPair, assignment.clip_pair_id)
        clips = _clips(session, pair, assignment.natural_side)
        return {
            "status": "trial",
            "trial": {
                "id": assignment.id,
                "position": assignment.position,
                "audio": {s: f"/api/annotate/audio/{assignment.id}/{s}" for s in "AB"},
                "durations": {s: clips[s].duration_s for s in "AB"},
                "ask_artifact": pair.is_artifact_control,
            },
            "progress": progress(session, annotator, settings),
        }
    counts = annotator_counts(session, annotator)
    if counts["formal"] < settings.trials_per_annotator and pairs_still_open(session, annotator, settings):
        # Every pair left is held by someone else; an abandoned claim expires and comes free.
        return {"status": "wait", "retry_after_s": WAIT_RETRY_S, "progress": progress(session, annotator, settings)}
    if counts["done"] == 0:  # every pair was skipped (or taken by others): nothing was judged
        return _no_work(annotator, study)
    return {**_complete(session, annotator, study, now), "progress": progress(session, annotator, settings)}


def finish_practice(session: Session, annotator: Annotator, now: datetime | None = None) -> None:
    hold_study(session, annotator, shared=True)
    if annotator.practice_done_at is None:
        annotator.practice_done_at = now or utc_now()
        session.add(annotator)
        session.flush()


def audio_clip(session: Session, annotator: Annotator, trial_id: int, side: str) -> DialogueClip:
    """The clip on `side` of the annotator's own trial; other people's trials are refused."""
    if side not in ("A", "B"):
        raise TrialError(f"side must be A or B, got {side!r}")
    assignment = session.get(Assignment, trial_id) if 0 < trial_id <= MAX_ID else None
    if assignment is None or assignment.annotator_id != annotator.id:
        raise AccessDenied(f"trial {trial_id} is not assigned to you")
    return _clips(session, session.get(ClipPair, assignment.clip_pair_id), assignment.natural_side)[side]


def skip_trial(session: Session, annotator: Annotator, trial_id, reason) -> SkippedTrial:
    """Pass over one of the annotator's open trials (a clip would not play), keeping the report.

    The claim is dropped, so its slot goes to someone else and the trial does not count toward
    the annotator's quota; the pair is not offered to them again."""
    if isinstance(trial_id, bool) or not isinstance(trial_id, int) or not 0 < trial_id <= MAX_ID:
        raise TrialError(f"trial must be a trial number, got {trial_id!r}")
    if not isinstance(reason, str) or not reason.strip() or len(reason) > SKIP_REASON_MAX or "\0" in reason:
        raise TrialError(f"reason must be a text of 1 to {SKIP_REASON_MAX} characters")
    hold_study(session, annotator, shared=True)
    assignment = session.exec(select(Assignment).where(Assignment.id == trial_id).with_for_update()).first()
    if assignment is None or assignment.annotator_id != annotator.id:
        raise AccessDenied(f"trial {trial_id} is not assigned to you")
    if assignment.status == "done":
        raise AlreadyAnswered(f"trial {trial_id} was answered already; it cannot be skipped")
    skipped = SkippedTrial(annotator_id=annotator.id, clip_pair_id=assignment.clip_pair_id, reason=reason.strip())
    session.add(skipped)
    session.delete(assignment)
    session.flush()
    return skipped


def practice_clip(session: Session, annotator: Annotator, index: int, side: str) -> DialogueClip:
    if side not in ("A", "B"):
        raise TrialError(f"side must be A or B, got {side!r}")
    practice = practice_pairs(session, annotator.study_id)
    if not 0 <= index < len(practice):
        raise TrialError(f"there is no practice trial {index}")
    pair = practice[index]
    return _clips(session, pair, practice_side(annotator, pair))[side]


# Answers


@dataclass(frozen=True)
class Submission:
    trial: int
    choice: str
    rating_a: int
    rating_b: int
    artifact_rating_a: int | None
    artifact_rating_b: int | None
    plays_a: int
    plays_b: int
    listened_s_a: float
    listened_s_b: float
    response_s: float


REQUIRED = ("trial", "choice", "rating_a", "rating_b", "plays_a", "plays_b", "listened_s_a", "listened_s_b",
            "response_s")
OPTIONAL = ("artifact_rating_a", "artifact_rating_b")


# Upper bounds of a submission's counts and times: far above any honest value, and inside the
# database's 32-bit integers (2**70 plays gave a server error; 1e308 s skewed every mean).
MAX_ID = 2**31 - 1
MAX_PLAYS = 1000
MAX_SECONDS = 24 * 3600.0


def _int(payload: dict, name: str, low: int | None = None, high: int | None = None) -> int:
    value = payload[name]
    if isinstance(value, bool) or not isinstance(value, int):
        raise TrialError(f"{name} must be a whole number, got {value!r}")
    if (low is not None and value < low) or (high is not None and value > high):
        raise TrialError(f"{name} must be between {low} and {high}, got {value}")
    return value


def _seconds(payload: dict, name: str) -> float:
    value = payload[name]
    if (isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0
            or value > MAX_SECONDS):
        raise TrialError(f"{name} must be a number of seconds between 0 and {MAX_SECONDS:.0f}, got {value!r}")
    return float(value)


def parse_submission(payload: dict) -> Submission:
    """A submission's fields, checked for presence, type and range (one-line errors)."""
    if not isinstance(payload, dict):
        raise TrialError("a submission must be a JSON object")
    unknown = set(payload) - set(REQUIRED) - set(OPTIONAL) - {"token"}
    if unknown:
        raise TrialError(f"unknown field {sorted(unknown)[0]!r} in the submission")
    for name in REQUIRED:
        if payload.get(name) is None:
            raise TrialError(f"missing field {name!r} in the submission")
    if payload["choice"] not in ("A", "B"):
        raise TrialError(f"choice must be 'A' or 'B', got {payload['choice']!r}")
    artifact = {}
    for name in OPTIONAL:
        artifact[name] = None if payload.get(name) is None else _int(payload, name, RATINGS[0], RATINGS[-1])
    return Submission(
        trial=_int(payload, "trial", 1, MAX_ID),
        choice=payload["choice"],
        rating_a=_int(payload, "rating_a", RATINGS[0], RATINGS[-1]),
        rating_b=_int(payload, "rating_b", RATINGS[0], RATINGS[-1]),
        plays_a=_int(payload, "plays_a", 0, MAX_PLAYS),
        plays_b=_int(payload, "plays_b", 0, MAX_PLAYS),
        listened_s_a=_seconds(payload, "listened_s_a"),
        listened_s_b=_seconds(payload, "listened_s_b"),
        response_s=_seconds(payload, "response_s"),
        **artifact,
    )


def _same_answer(judgment: Judgment, sub: Submission) -> bool:
    return (
        judgment.choice == sub.choice
        and (judgment.rating_a, judgment.rating_b) == (sub.rating_a, sub.rating_b)
        and (judgment.artifact_rating_a, judgment.artifact_rating_b) == (sub.artifact_rating_a, sub.artifact_rating_b)
        and (judgment.plays_a, judgment.plays_b) == (sub.plays_a, sub.plays_b)
        and (judgment.listened_s_a, judgment.listened_s_b) == (sub.listened_s_a, sub.listened_s_b)
        and judgment.response_s == sub.response_s
    )


def submit(session: Session, annotator: Annotator, payload: dict, now: datetime | None = None) -> tuple[Judgment, bool]:
    """Store the answer to one of the annotator's trials; returns (judgment, whether new).

    The same answer sent again returns the stored row (a retry after a lost response); a
    different answer to an answered trial is refused, the first one is kept.
    """
    now = now or utc_now()
    sub = parse_submission(payload)
    hold_study(session, annotator, shared=True)  # an erasure cannot list their rows before this one commits
    # Row lock (PostgreSQL): an expired claim cannot be handed to someone else meanwhile.
    assignment = session.exec(select(Assignment).where(Assignment.id == sub.trial).with_for_update()).first()
    if assignment is None or assignment.annotator_id != annotator.id:
        raise AccessDenied(f"trial {sub.trial} is not assigned to you (it may have expired and gone to someone else)")
    pair = session.get(ClipPair, assignment.clip_pair_id)
    if assignment.status == "done":
        stored = session.exec(
            select(Judgment).where(Judgment.annotator_id == annotator.id, Judgment.clip_pair_id == pair.id)
        ).one()
        if _same_answer(stored, sub):
            return stored, False
        raise AlreadyAnswered(f"trial {sub.trial} was already answered; the first answer is kept")

    if pair.is_artifact_control and None in (sub.artifact_rating_a, sub.artifact_rating_b):
        raise TrialError("this trial asks for an artifact rating of both clips (artifact_rating_a, artifact_rating_b)")
    if not pair.is_artifact_control and (sub.artifact_rating_a, sub.artifact_rating_b) != (None, None):
        raise TrialError("artifact ratings belong to artifact-control trials only; this trial has none")
    clips = _clips(session, pair, assignment.natural_side)
    for side, plays, listened in (("A", sub.plays_a, sub.listened_s_a), ("B", sub.plays_b, sub.listened_s_b)):
        needed = clips[side].duration_s * LISTEN_SHARE - LISTEN_SLACK_S
        if plays < 1 or listened < needed:
            raise TrialError(
                f"clip {side} was not played to the end before answering "
                f"(heard {listened:.1f} s of {clips[side].duration_s:.1f} s)"
            )

    judgment = Judgment(
        annotator_id=annotator.id,
        clip_pair_id=pair.id,
        natural_side=assignment.natural_side,
        choice=sub.choice,
        rating_a=sub.rating_a,
        rating_b=sub.rating_b,
        artifact_rating_a=sub.artifact_rating_a,
        artifact_rating_b=sub.artifact_rating_b,
        plays_a=sub.plays_a,
        plays_b=sub.plays_b,
        listened_s_a=sub.listened_s_a,
        listened_s_b=sub.listened_s_b,
        response_s=sub.response_s,
        presented_at=assignment.claimed_at,
        submitted_at=now,
    )
    stored, created = record_judgment(session, judgment)
    session.exec(sa.update(Assignment).where(Assignment.id == assignment.id).values(status="done", done_at=now))
    session.expire(assignment)
    return stored, created

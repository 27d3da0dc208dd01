"""A study's data, read from the database once per view, and the study overview numbers.

`load_study(engine, name)` gathers everything the researcher views need into pandas tables
(sessions with their systems and recordings, clip pairs, judgments, annotators). The functions
below it compute the overview: one function per number or table.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from sqlmodel import Session, select

from storage.erasure import annotator_pseudonym
from storage.models import (
    AnalysisResult,
    Annotator,
    ClipPair,
    ConnectionCheck,
    ConversationSession,
    DialogueClip,
    DialogueSystem,
    Judgment,
    Participant,
    Recording,
    Study,
)
from storage.records import study_by_name
from turntaking.events import EventParams


class StudyNotFound(LookupError):
    """No study of that name; the message says which names exist."""


@dataclass
class StudyData:
    name: str
    title: str
    config: dict
    study_id: int
    systems: pd.DataFrame  # system_id, system, kind
    sessions: pd.DataFrame  # one row per conversation session (see `_sessions`)
    pairs: pd.DataFrame  # one row per clip pair (see `_pairs`)
    judgments: pd.DataFrame  # analysis.agreement's columns, + judgment_id, annotator_id, clip_pair_id
    annotators: pd.DataFrame  # annotator_id, annotator, completed
    # one row per connection check before consent (see `_connection_checks`)
    connection_checks: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=CHECK_COLUMNS))
    # the pseudonyms of the demo's people (their Prolific-ID column says DEMO_PREFIX...): the views
    # name everyone by pseudonym, so the demo's are told apart here
    demo_names: frozenset = frozenset()

    @property
    def events(self) -> EventParams:
        """How the study's events are found: its config's `events:`, else the defaults."""
        return EventParams.from_dict(self.config.get("events"))


def study_names(engine) -> list[str]:
    with Session(engine) as session:
        return list(session.exec(select(Study.name).order_by(Study.id)))


def _frame(rows, columns) -> pd.DataFrame:
    return pd.DataFrame([dict(zip(columns, r)) for r in rows], columns=columns)


SESSION_COLUMNS = ["session_id", "participant", "system", "kind", "topic", "status", "started_at", "ended_at",
                   "analysable", "quality_reason",
                   "recording_id", "recording_path", "recording_sha256", "recording_s", "system_channel",
                   "network"]  # the call's network figures (studies.network_figures), None: not measured


def _sessions(session: Session, study_id: int) -> pd.DataFrame:
    rows = session.exec(
        select(ConversationSession.id, Participant.id, Participant.pseudonym, DialogueSystem.name,
               DialogueSystem.kind, ConversationSession.topic, ConversationSession.status,
               ConversationSession.started_at, ConversationSession.ended_at, ConversationSession.analysable,
               ConversationSession.quality_reason, Recording.id, Recording.path,
               Recording.sha256, Recording.duration_s, Recording.system_channel, ConversationSession.network)
        .join(Participant, Participant.id == ConversationSession.participant_id)
        .join(DialogueSystem, DialogueSystem.id == ConversationSession.system_id)
        .outerjoin(Recording, (Recording.session_id == ConversationSession.id) & (Recording.kind == "two-channel"))
        .where(DialogueSystem.study_id == study_id)
        .order_by(ConversationSession.id)
    ).all()
    # named by pseudonym only: a view, report or export must not carry the Prolific ID that links a
    # voice to a Prolific account (the payments table is the one place it leaves: analysis.payments)
    table = [(r[0], r[2], *r[3:]) for r in rows]
    frame = _frame(table, SESSION_COLUMNS)
    frame["analysable"] = frame["analysable"].astype(object)  # True, False, or None: not checked yet
    # A session with several two-channel recordings: the first one.
    return frame.drop_duplicates("session_id").reset_index(drop=True)


CHECK_COLUMNS = ["check_id", "external_id", "outcome", "reason", "candidate_type"]


def _connection_checks(session: Session, study_id: int) -> pd.DataFrame:
    rows = session.exec(select(ConnectionCheck.id, ConnectionCheck.external_id, ConnectionCheck.outcome,
                               ConnectionCheck.reason, ConnectionCheck.candidate_type)
                        .where(ConnectionCheck.study_id == study_id).order_by(ConnectionCheck.id)).all()
    return _frame(rows, CHECK_COLUMNS)


PAIR_COLUMNS = ["clip_pair_id", "pair_id", "type", "trial", "natural_clip_id", "perturbed_clip_id", "source"]


def trial_kind(pair: ClipPair) -> str:
    if pair.is_attention_check:
        return "attention"
    if pair.is_artifact_control:
        return "artifact_control"
    if getattr(pair, "is_practice", False):
        return "practice"
    return "formal"


def _pairs(session: Session, study_id: int) -> pd.DataFrame:
    pairs = session.exec(select(ClipPair).where(ClipPair.study_id == study_id).order_by(ClipPair.id)).all()
    # "source": the conversation the pair was cut from (kept in its edit by the benchmark builders)
    return _frame([(p.id, p.pair_id, p.perturbation, trial_kind(p), p.natural_clip_id, p.perturbed_clip_id,
                    (p.edit or {}).get("source")) for p in pairs], PAIR_COLUMNS)


JUDGMENT_COLUMNS = ["judgment_id", "annotator_id", "annotator", "clip_pair_id", "pair_id", "type", "trial", "choice",
                    "rating_natural", "rating_perturbed", "artifact_natural", "artifact_perturbed",
                    "attention_passed", "duration_s"]


JUDGMENT_FIELDS = ("id", "annotator_id", "clip_pair_id", "natural_side", "choice", "rating_a", "rating_b",
                   "artifact_rating_a", "artifact_rating_b", "response_s")


def judgment_row(j, annotator: str, pair: dict) -> tuple:
    """One judgment (a Judgment or a row with its fields) in analysis.agreement's terms: sides
    A/B turned into natural/perturbed."""
    natural_is_a = j.natural_side == "A"
    chose_natural = j.choice == j.natural_side

    def by_side(a, b):
        return (a, b) if natural_is_a else (b, a)

    rating_nat, rating_pert = by_side(j.rating_a, j.rating_b)
    art_nat, art_pert = by_side(getattr(j, "artifact_rating_a", None), getattr(j, "artifact_rating_b", None))
    attention = chose_natural if pair["trial"] == "attention" else None
    return (j.id, j.annotator_id, annotator, j.clip_pair_id, pair["pair_id"], pair["type"], pair["trial"],
            "natural" if chose_natural else "perturbed", rating_nat, rating_pert, art_nat, art_pert, attention,
            j.response_s)


def _judgments(session: Session, study_id: int, pairs: pd.DataFrame, annotators: pd.DataFrame) -> pd.DataFrame:
    by_pair = pairs.set_index("clip_pair_id").to_dict("index")
    names = dict(zip(annotators["annotator_id"], annotators["annotator"]))
    # Plain columns, not ORM objects: ten thousand judgments load in a fraction of a second.
    columns = [getattr(Judgment, f) for f in JUDGMENT_FIELDS if hasattr(Judgment, f)]
    rows = session.exec(
        select(*columns).join(ClipPair, ClipPair.id == Judgment.clip_pair_id).where(ClipPair.study_id == study_id)
        .order_by(Judgment.id)
    ).all()
    frame = _frame([judgment_row(j, names[j.annotator_id], by_pair[j.clip_pair_id]) for j in rows], JUDGMENT_COLUMNS)
    for column in ("rating_natural", "rating_perturbed", "artifact_natural", "artifact_perturbed", "duration_s"):
        frame[column] = pd.to_numeric(frame[column], errors="coerce").astype(float)
    frame["attention_passed"] = frame["attention_passed"].astype(object)
    return frame[frame["trial"] != "practice"].reset_index(drop=True)


def clip_activities(engine, data: "StudyData", clip_ids=None) -> dict[int, dict | None]:
    """{clip id: voice-activity JSON} of the study's paired clips (or of `clip_ids`)."""
    wanted = set(map(int, clip_ids)) if clip_ids is not None else (
        set(map(int, data.pairs["natural_clip_id"])) | set(map(int, data.pairs["perturbed_clip_id"])))
    if not wanted:
        return {}
    with Session(engine) as session:
        rows = session.exec(select(DialogueClip.id, DialogueClip.activity).where(DialogueClip.id.in_(list(wanted))))
        return {int(i): a for i, a in rows}


def study_id_by_name(engine, name: str) -> int | None:
    with Session(engine) as session:
        study = study_by_name(session, name)
        return None if study is None else study.id


def load_study(engine, name: str) -> StudyData:
    with Session(engine) as session:
        study = study_by_name(session, name)
        if study is None:
            known = ", ".join(repr(n) for n in session.exec(select(Study.name))) or "none"
            raise StudyNotFound(f"no study named {name!r} (studies: {known})")
        systems = _frame(session.exec(select(DialogueSystem.id, DialogueSystem.name, DialogueSystem.kind)
                                      .where(DialogueSystem.study_id == study.id).order_by(DialogueSystem.id)).all(),
                         ["system_id", "system", "kind"])
        annotator_rows = session.exec(select(Annotator).where(Annotator.study_id == study.id).order_by(Annotator.id))
        annotators = _frame([(a.id, annotator_pseudonym(a.id), a.completed_at is not None)
                             for a in annotator_rows], ["annotator_id", "annotator", "completed"])
        pairs = _pairs(session, study.id)
        demo = list(session.exec(select(Participant.pseudonym).where(
            Participant.study_id == study.id, Participant.external_id.startswith(DEMO_PREFIX))).all())
        demo += [annotator_pseudonym(a) for a in session.exec(select(Annotator.id).where(
            Annotator.study_id == study.id, Annotator.external_id.startswith(DEMO_PREFIX))).all()]
        return StudyData(
            name=study.name, title=study.title or study.name, config=dict(study.config or {}), study_id=study.id,
            systems=systems, sessions=_sessions(session, study.id), pairs=pairs,
            judgments=_judgments(session, study.id, pairs, annotators), annotators=annotators,
            connection_checks=_connection_checks(session, study.id), demo_names=frozenset(demo),
        )


# -- which sessions are analysed: the one rule ---------------------------------------------------
# A session counts in every statistic, judge metric and naturalness score exactly when its call
# was found analysable (studies.call_quality: at its end, or from its voice activity for older
# rows). Every number of the views goes through `analysable_session_ids`, so every scorer and
# statistic counts the same sessions; `excluded_sessions` lists the others with their reason.


def analysable_session_ids(data: "StudyData") -> set[int]:
    """The sessions the analysis uses."""
    return set(map(int, data.sessions.loc[data.sessions["analysable"].eq(True), "session_id"]))


def excluded_sessions(data: "StudyData") -> pd.DataFrame:
    """The sessions left out of every statistic and score, each with why (no speech from the
    participant, no answer from the system, too short, no recording)."""
    out = data.sessions[data.sessions["analysable"].eq(False)]
    return pd.DataFrame({"session_id": out["session_id"].astype(int), "system": out["system"],
                         "participant": out["participant"], "status": out["status"],
                         "duration_s": pd.to_numeric(out["recording_s"], errors="coerce"),
                         "reason": out["quality_reason"]},
                        columns=EXCLUDED_COLUMNS).reset_index(drop=True)


EXCLUDED_COLUMNS = ["session_id", "system", "participant", "status", "duration_s", "reason"]


def unanswered_calls(data: "StudyData", reason: str) -> dict[str, tuple[int, int]]:
    """{system: (calls whose verdict is `reason`, calls checked)} for the systems with any: a
    system that never answered is a finding about the system, not a calm conversation."""
    checked = data.sessions[data.sessions["analysable"].notna()]
    out = {}
    for system, group in checked.groupby("system", sort=False):
        hits = int(group["quality_reason"].eq(reason).sum())
        if hits:
            out[system] = (hits, int(len(group)))
    return out


# -- overview ------------------------------------------------------------------------------------


def clock_duration(seconds: float) -> str:
    """A length of time as h:mm:ss (the recorded time of a study: 0:01:03, not 0.0175 h)."""
    whole = int(round(seconds))
    return f"{whole // 3600}:{whole // 60 % 60:02d}:{whole % 60:02d}"


def sessions_per_system(data: StudyData) -> pd.DataFrame:
    """Per system: participants, sessions (all, complete), recordings and the time recorded."""
    rows = []
    for system in data.systems.itertuples():
        own = data.sessions[data.sessions["system"] == system.system]
        rows.append({
            "system": system.system,
            "kind": system.kind,
            "participants": int(own["participant"].nunique()),
            "sessions": int(len(own)),
            "complete_sessions": int((own["status"] == "complete").sum()),
            "analysable_sessions": int(own["analysable"].eq(True).sum()),
            "not_analysable": int(own["analysable"].eq(False).sum()),
            "recordings": int(own["recording_id"].notna().sum()),
            RECORDED: clock_duration(float(pd.to_numeric(own["recording_s"], errors="coerce").fillna(0).sum())),
        })
    return pd.DataFrame(rows, columns=["system", "kind", "participants", "sessions", "complete_sessions",
                                       "analysable_sessions", "not_analysable", "recordings", RECORDED])


RECORDED = "recorded (h:mm:ss)"
PAIRS_JUDGED = "formal and control pairs"  # the pairs that take judgments (not practice, not attention)


def annotation_progress(data: StudyData, per_pair: int | None = None) -> pd.DataFrame:
    """How many pairs (formal and artifact-control) have 0, 1, ..., K judgments."""
    pairs = data.pairs[data.pairs["trial"].isin(["formal", "artifact_control"])]
    counts = data.judgments.groupby("clip_pair_id").size()
    per = pairs["clip_pair_id"].map(counts).fillna(0).astype(int)
    top = max(int(per.max()) if len(per) else 0, per_pair or int(data.config.get("judgments_per_pair", 0) or 0))
    return pd.DataFrame({"judgments": list(range(top + 1)),
                         PAIRS_JUDGED: [int((per == k).sum()) for k in range(top + 1)]})


def clip_pair_counts(data: StudyData) -> dict[str, int]:
    """The study's clip pairs by what they are for: formal (the ones analysed), artifact controls,
    attention checks, practice, and all of them."""
    kinds = data.pairs["trial"]
    return {"formal": int((kinds == "formal").sum()), "artifact_control": int((kinds == "artifact_control").sum()),
            "attention": int((kinds == "attention").sum()), "practice": int((kinds == "practice").sum()),
            "all": int(len(kinds))}


DEMO_PREFIX = "demo-"  # the demo's callers and the simulated study's participants and annotators


def real_data_counts(data: StudyData) -> dict[str, int]:
    """What in a study is not demo data: participants and annotators whose Prolific-ID column does
    not start with DEMO_PREFIX, and those annotators' judgments."""
    people = data.sessions["participant"].astype(str)
    real_annotators = data.annotators[~data.annotators["annotator"].astype(str).isin(data.demo_names)]
    return {"participants": int(people[~people.isin(data.demo_names)].nunique()),
            "annotators": int(len(real_annotators)),
            "judgments": int(data.judgments["annotator_id"].isin(real_annotators["annotator_id"]).sum())}


def demo_note(label: str, real: dict[str, int]) -> str:
    """The overview's line on demo data: what is demo, and what real data came since (counted)."""
    if not any(real.values()):
        return f"**{label}.** No real participants, annotators or judgments yet."
    counted = ", ".join(f"{n} real {kind if n != 1 else kind[:-1]}" for kind, n in real.items())
    return f"**{label}.** Real data added since: {counted}; the views show them together with the demo's."


def annotator_completion(data: StudyData) -> pd.DataFrame:
    """Per annotator: judgments by trial kind and whether they finished."""
    rows = []
    for a in data.annotators.itertuples():
        own = data.judgments[data.judgments["annotator_id"] == a.annotator_id]
        rows.append({"annotator": a.annotator, "judgments": int(len(own)),
                     "formal": int((own["trial"] == "formal").sum()),
                     "artifact_control": int((own["trial"] == "artifact_control").sum()),
                     "attention": int((own["trial"] == "attention").sum()), "completed": bool(a.completed)})
    return pd.DataFrame(rows, columns=["annotator", "judgments", "formal", "artifact_control", "attention", "completed"])


def connection_check_failures(data: StudyData) -> pd.DataFrame:
    """Per reason a connection check failed (studies.connection_check): the checks and the
    distinct external ids (people, where the study link carries one) that got it."""
    failed = data.connection_checks[data.connection_checks["outcome"] == "failed"]
    rows = [{"reason": reason, "checks": int(len(group)), "distinct_external_ids": int(group["external_id"].nunique())}
            for reason, group in failed.groupby("reason", sort=True)]
    return pd.DataFrame(rows, columns=["reason", "checks", "distinct_external_ids"])


def could_not_connect(data: StudyData) -> dict:
    """The headline of the connection checks: how many ran, passed and failed, and how many
    external ids failed without ever passing (those who could not take part)."""
    checks = data.connection_checks
    passed = set(checks.loc[checks["outcome"] == "ok", "external_id"].dropna())
    failed = set(checks.loc[checks["outcome"] == "failed", "external_id"].dropna())
    return {"checks": int(len(checks)), "passed": int((checks["outcome"] == "ok").sum()),
            "failed": int((checks["outcome"] == "failed").sum()), "external_ids_never_passed": len(failed - passed)}


def overview_headline(data: StudyData) -> dict:
    return {
        "study": data.name,
        "participants": int(data.sessions["participant"].nunique()),
        "sessions": int(len(data.sessions)),
        "analysable_sessions": len(analysable_session_ids(data)),
        "excluded_sessions": [{"session_id": int(r.session_id), "system": r.system, "reason": r.reason}
                              for r in excluded_sessions(data).itertuples()],
        "recorded_s": round(float(pd.to_numeric(data.sessions["recording_s"], errors="coerce").fillna(0).sum()), 1),
        "formal_clip_pairs": int((data.pairs["trial"] == "formal").sum()),
        "clip_pairs": clip_pair_counts(data),
        "judgments": int(len(data.judgments)),
        "annotators": int(len(data.annotators)),
        "demo_data": data.config.get("demo_data"),
        "real_data": real_data_counts(data),
    }


# -- cached per-session results ------------------------------------------------------------------


def cached_results(engine, kind: str, wanted: dict[str, str]) -> dict[str, dict]:
    """{subject: result} of the AnalysisResult cache for `wanted` ({subject: params hash}), one query."""
    if not wanted:
        return {}
    with Session(engine) as session:
        rows = session.exec(
            select(AnalysisResult.subject, AnalysisResult.params_hash, AnalysisResult.result).where(
                AnalysisResult.kind == kind, AnalysisResult.subject.in_(list(wanted)))
        ).all()
    return {subject: result for subject, digest, result in rows if wanted[subject] == digest}


def latest_results(engine, kind: str, subjects: list[str]) -> dict[str, dict]:
    """{subject: result} whatever the parameters (for one-per-subject results like voice activity)."""
    if not subjects:
        return {}
    with Session(engine) as session:
        rows = session.exec(
            select(AnalysisResult.subject, AnalysisResult.result)
            .where(AnalysisResult.kind == kind, AnalysisResult.subject.in_(list(subjects)))
            .order_by(AnalysisResult.updated_at)
        ).all()
    return dict(rows)


def result_versions(engine, kind: str, subjects: list[str]) -> dict[str, str]:
    """{subject: version} of one-per-subject results, without reading them: the version (row id
    and update time) changes whenever the result is replaced."""
    if not subjects:
        return {}
    with Session(engine) as session:
        rows = session.exec(
            select(AnalysisResult.subject, AnalysisResult.id, AnalysisResult.updated_at)
            .where(AnalysisResult.kind == kind, AnalysisResult.subject.in_(list(subjects)))
            .order_by(AnalysisResult.updated_at)
        ).all()
    return {subject: f"{row_id}@{updated.isoformat()}" for subject, row_id, updated in rows}


def finite(value) -> float | None:
    """A JSON/table-safe number: None for NaN and infinities."""
    if value is None:
        return None
    value = float(value)
    return value if np.isfinite(value) else None

"""Participants' questionnaire answers of one study, read from the database, and the per-session
measures the platform computed of the same calls, ready for analysis.questionnaire_stats and
analysis.measure_tracking.

    answers = load_answers(engine, data)           # data: analysis.study.StudyData
    answers.ratings                                 # scale answers as Rating records
    answers.rankings                                # per participant, systems best first
    answers.rows                                    # one row per participant x part x item

A call's `position` is its order among the participant's complete calls (1: their first), so
that an order effect can be told from a system effect. A pick of the most natural system is a
partial order: the picked system before every other (a ranking of one, as
analysis.questionnaire_stats.bradley_terry reads it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pandas as pd
from sqlmodel import Session, select

from analysis.questionnaire_stats import Rating
from analysis.examiner_results import FDB_COLUMNS, PROBE_COLUMNS, SWITCHBOARD_COLUMNS
from analysis.study import StudyData, finite
from judge.metrics import METRICS
from storage.models import Participant, QuestionnaireResponse
from studies.config import stored_settings
from studies.questionnaire import Questionnaire, QuestionnaireError, default_questionnaire

AFTER_LAST = "after_last"
ROW_COLUMNS = ["participant", "part", "session_id", "system", "position", "item", "kind", "reverse_keyed",
               "value", "scale_value", "submitted_at"]
EXAMINER_MEASURES = (*FDB_COLUMNS, *PROBE_COLUMNS, *SWITCHBOARD_COLUMNS)
TEXT_COLUMNS = ["item", "participant", "session_id", "system", "position", "comment"]
CHOICE_COLUMNS = ["item", "system", "option", "answers"]


@dataclass(frozen=True)
class StudyAnswers:
    questionnaire: Questionnaire
    rows: pd.DataFrame  # ROW_COLUMNS: every answer, one row per participant x part x item
    ratings: tuple[Rating, ...]  # the scale items' answers of the calls
    rankings: tuple[tuple[str, ...], ...]  # rank items: one per participant and item, best first
    picks: tuple[tuple[str], ...]  # pick items: (the picked system,), preferred over the others
    choices: pd.DataFrame  # CHOICE_COLUMNS: choice items' answers counted per system and option
    texts: pd.DataFrame  # TEXT_COLUMNS: the free texts that say something
    participants: int  # who answered anything
    demo_participants: int  # of them, the demo's (StudyData.demo_names)

    @property
    def scale_items(self) -> list:
        return [item for item in self.questionnaire.after_call + self.questionnaire.after_last
                if item.kind == "scale"]


def study_questionnaire(data: StudyData) -> Questionnaire:
    """The questionnaire the study's participants were given (its own, else the default)."""
    try:
        return stored_settings(data.name, data.title, data.config).call_questionnaire(len(data.systems))
    except QuestionnaireError:  # a stored one that no longer parses: read the answers by the default
        return default_questionnaire(len(data.systems))


def call_positions(data: StudyData) -> dict[int, int]:
    """{session id: its order among its participant's complete calls, from 1}; a call that is not
    complete gets the position it would have after the complete ones started before it."""
    sessions = data.sessions.sort_values(["started_at", "session_id"])
    out = {}
    for _, own in sessions.groupby("participant", sort=False):
        before = 0
        for row in own.itertuples():
            out[int(row.session_id)] = before + 1
            before += row.status == "complete"
    return out


def _responses(engine, study_id: int) -> list[tuple]:
    with Session(engine) as session:
        return session.exec(
            select(QuestionnaireResponse.session_id, QuestionnaireResponse.part, QuestionnaireResponse.answers,
                   QuestionnaireResponse.systems, QuestionnaireResponse.submitted_at, Participant.pseudonym)
            .join(Participant, Participant.id == QuestionnaireResponse.participant_id)
            .where(Participant.study_id == study_id)
            .order_by(QuestionnaireResponse.id)
        ).all()


def _value_text(kind: str, value, systems: dict) -> str | None:
    """An answer as the export writes it: a pick or a rank by the systems' names (a rank as a
    JSON list, best first), anything else as given."""
    if value is None or value == "" or value == []:
        return None
    if kind == "pick":
        return systems.get(value, str(value))
    if kind == "rank" and isinstance(value, list):
        return json.dumps([systems.get(label, str(label)) for label in value])
    return value if isinstance(value, str) else json.dumps(value)


def answer_rows(engine, data: StudyData, questionnaire: Questionnaire) -> pd.DataFrame:
    """Every stored answer, one row per participant x part x item (ROW_COLUMNS)."""
    items = {item.id: item for item in questionnaire.after_call + questionnaire.after_last}
    system_of = dict(zip(data.sessions["session_id"].astype(int), data.sessions["system"]))
    positions = call_positions(data)
    rows = []
    for session_id, part, answers, systems, submitted_at, pseudonym in _responses(engine, data.study_id):
        session_id = int(session_id) if session_id is not None else None
        for item_id, value in (answers or {}).items():
            item = items.get(item_id)
            kind = item.kind if item else "unknown"  # an item the study file no longer has
            scale = value if kind == "scale" and isinstance(value, int) and not isinstance(value, bool) else None
            rows.append({"participant": pseudonym, "part": part, "session_id": session_id,
                         "system": system_of.get(session_id), "position": positions.get(session_id),
                         "item": item_id, "kind": kind, "reverse_keyed": bool(item and item.reverse_keyed),
                         "value": _value_text(kind, value, systems or {}), "scale_value": scale,
                         "submitted_at": submitted_at.isoformat() if submitted_at else None})
    frame = pd.DataFrame(rows, columns=ROW_COLUMNS)
    frame["session_id"] = frame["session_id"].astype("Int64")
    frame["position"] = frame["position"].astype("Int64")
    frame["scale_value"] = pd.to_numeric(frame["scale_value"], errors="coerce")
    return frame


def _ratings(rows: pd.DataFrame) -> tuple[Rating, ...]:
    scale = rows[(rows["kind"] == "scale") & rows["scale_value"].notna() & rows["session_id"].notna()]
    return tuple(Rating(str(r.participant), int(r.session_id), str(r.system), int(r.position), str(r.item),
                        int(r.scale_value)) for r in scale.itertuples())


def _rankings(rows: pd.DataFrame) -> tuple[tuple[str, ...], ...]:
    ranked = rows[(rows["kind"] == "rank") & rows["value"].notna()]
    return tuple(tuple(json.loads(value)) for value in ranked["value"])


def _picks(rows: pd.DataFrame) -> tuple[tuple[str], ...]:
    picks = rows[(rows["kind"] == "pick") & rows["value"].notna()]
    return tuple((value,) for value in picks["value"])


def _choices(rows: pd.DataFrame, questionnaire: Questionnaire) -> pd.DataFrame:
    out = []
    for item in questionnaire.after_call + questionnaire.after_last:
        if item.kind != "choice":
            continue
        own = rows[rows["item"] == item.id]
        for system, group in own.groupby(own["system"].fillna("(after the last call)"), sort=True):
            counts = group["value"].value_counts()
            out += [{"item": item.id, "system": system, "option": option, "answers": int(counts.get(option, 0))}
                    for option in item.options]
    return pd.DataFrame(out, columns=CHOICE_COLUMNS)


def _texts(rows: pd.DataFrame) -> pd.DataFrame:
    said = rows[(rows["kind"] == "text") & rows["value"].fillna("").str.strip().astype(bool)]
    return pd.DataFrame({"item": said["item"], "participant": said["participant"], "session_id": said["session_id"],
                         "system": said["system"], "position": said["position"],
                         "comment": said["value"].str.strip()}, columns=TEXT_COLUMNS).reset_index(drop=True)


def load_answers(engine, data: StudyData) -> StudyAnswers:
    """The study's questionnaire answers in the forms the statistics take."""
    questionnaire = study_questionnaire(data)
    rows = answer_rows(engine, data, questionnaire)
    people = rows["participant"].astype(str).unique()
    return StudyAnswers(
        questionnaire=questionnaire, rows=rows, ratings=_ratings(rows),
        rankings=_rankings(rows), picks=_picks(rows), choices=_choices(rows, questionnaire),
        texts=_texts(rows), participants=len(people),
        demo_participants=int(sum(p in data.demo_names for p in people)))


# -- what the platform measured of each call ------------------------------------------------------


def _system_speaker(stats: dict, system_channel) -> dict:
    channel = int(system_channel) if pd.notna(system_channel) else 1
    return list(stats["speakers"].values())[channel]


def timing_measures(stats: dict, system_channel) -> dict[str, float | None]:
    """A session's timing, from its cached statistics: the floor-transfer offsets' median and
    spread (interquartile range), the system's response latency (its mean gap before taking the
    turn), and the system's interruptions and backchannels per minute.

    >>> system = {"counts": {"gap": 2}, "durations_s": {"gap": 1.5},
    ...           "per_minute": {"interruption": 0.5, "backchannel": 2.0}}
    >>> stats = {"floor_transfer_offsets_s": [-0.2, 0.1, 0.3, 0.5], "speakers": {"participant": {}, "system": system}}
    >>> timing_measures(stats, 1)
    {'FTO median (ms)': 200.0, 'FTO spread, IQR (ms)': 325.0, 'response latency (s)': 0.75, 'system interruptions /min': 0.5, 'system backchannels /min': 2.0}
    """
    offsets = np.asarray(stats["floor_transfer_offsets_s"], dtype=float)
    system = _system_speaker(stats, system_channel)
    gaps = system["counts"]["gap"]
    q1, q3 = np.percentile(offsets, [25, 75]) if len(offsets) else (np.nan, np.nan)
    return {"FTO median (ms)": finite(round(1000 * np.median(offsets), 1)) if len(offsets) else None,
            "FTO spread, IQR (ms)": finite(round(1000 * (q3 - q1), 1)) if len(offsets) else None,
            "response latency (s)": finite(system["durations_s"]["gap"] / gaps) if gaps else None,
            "system interruptions /min": finite(system["per_minute"]["interruption"]),
            "system backchannels /min": finite(system["per_minute"]["backchannel"])}


def judge_measures(result: dict) -> dict[str, float | None]:
    """A session's agreement with the judge per metric (% of its decision instances where what
    the call did is what the judge would have done), from the cached bits.

    >>> found = judge_measures({"instances": {"speak_up": {"positive": "1100", "judged": "1000"}}})
    >>> found["judge: speak_up agreement %"], found["judge: backchannel agreement %"]
    (75.0, None)
    """
    out = {}
    for spec in METRICS:
        bits = result["instances"].get(spec.name)
        if not bits or not bits["positive"]:
            out[f"judge: {spec.name} agreement %"] = None
            continue
        positive = np.frombuffer(bits["positive"].encode(), dtype=np.uint8)
        judged = np.frombuffer(bits["judged"].encode(), dtype=np.uint8)
        out[f"judge: {spec.name} agreement %"] = finite(100.0 * float(np.mean(positive == judged)))
    return out


def examiner_measures(examiner: pd.DataFrame) -> dict[str, dict[str, float]]:
    """{system: {"examiner: COLUMN": value}}: the numbers of each examined system's examiner row
    (the same for every session of the system)."""
    out = {}
    examined = examiner[examiner["calls"].notna()] if "calls" in examiner else examiner.iloc[:0]
    for row in examined.to_dict("records"):
        out[row["system"]] = {f"examiner: {name}": float(row[name]) for name in EXAMINER_MEASURES
                              if name in row and pd.notna(row[name])}
    return out


def session_measures(data: StudyData, statistics: dict[int, dict], judge_results: dict[int, dict],
                     naturalness: dict[int, dict], scorer: str, examiner: pd.DataFrame) -> dict[int, dict]:
    """{session id: {measure: value or None}} of the analysable sessions, from the results the
    views read (the cache): timing, the judge's metrics, the default scorer's naturalness and the
    system's examiner row."""
    by_system = examiner_measures(examiner)
    out = {}
    for row in data.sessions.itertuples():
        session_id = int(row.session_id)
        if session_id not in statistics:
            continue
        measures = timing_measures(statistics[session_id], row.system_channel)
        if session_id in judge_results:
            measures |= judge_measures(judge_results[session_id])
        score = naturalness.get(session_id) or {}
        measures[f"naturalness ({scorer})"] = finite(score["naturalness"]) if "naturalness" in score else None
        out[session_id] = measures | by_system.get(row.system, {})
    return out

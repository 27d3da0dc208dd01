"""Questionnaire answers for demo calls: what a participant might plausibly have answered, made
from what was measured of each call (its reply latency and the system's interruptions) plus
noise, with a fixed seed, so that the researcher's questionnaire views show something on a
demo. They are demo data as their callers are: the participants' names start with "demo-".

    calls = [DemoCall(session_id, participant_id, "cascaded", latency_s=1.4, interruptions_per_min=0.0), ...]
    stored = store_demo_answers(session, study, calls, seed=0)
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np
from sqlmodel import Session, select

from analysis.study_sessions import recording_statistics
from storage.models import AnalysisResult, ConversationSession, DialogueSystem, QuestionnaireResponse
from studies.config import stored_settings
from studies.offline_call import active_segments, reply_latencies
from studies.questionnaire import Questionnaire, QuestionnaireItem
from turntaking.activity import conversation_from_json

# What the demo's participants write in an open comment: by how the call felt to them.
SLOW_COMMENTS = ("It took a while before it answered.", "Long pauses before each answer.",
                 "I was never sure whether it had heard me.")
QUICK_COMMENTS = ("It answered quickly, almost like a person.", "Felt fairly smooth.",
                  "The replies came at a natural moment.")
INTERRUPTING_COMMENTS = ("It cut in while I was still talking.", "A bit pushy: it started before I finished.")


@dataclass(frozen=True)
class DemoCall:
    session_id: int
    participant_id: int
    system: str
    latency_s: float | None  # the call's median reply latency (None: it never answered)
    interruptions_per_min: float = 0.0  # the system's


def call_feeling(call: DemoCall, rng) -> float:
    """How well-timed the call felt, 1-5: fast replies feel right, slow ones and interruptions
    do not; plus the participant's own noise."""
    latency = 3.0 if call.latency_s is None else call.latency_s
    return float(np.clip(4.8 - 1.1 * latency - 0.6 * call.interruptions_per_min + rng.normal(0, 0.5), 1, 5))


def _scale(value: float, item: QuestionnaireItem, rng) -> int:
    """`value` (1-5, higher = better timed) on the item's scale, turned round for a reverse-keyed
    item, with an answer's own noise."""
    value = 6 - value if item.reverse_keyed else value
    scaled = 1 + (value - 1) * (item.points - 1) / 4
    return int(np.clip(round(scaled + rng.normal(0, 0.6)), 1, item.points))


def _item_answer(item: QuestionnaireItem, call: DemoCall, feeling: float, rng):
    if item.kind == "scale":
        if item.id == "made_me_wait" and call.latency_s is not None:  # the measured wait itself
            return _scale(float(np.clip(5.2 - 1.3 * call.latency_s, 1, 5)), item, rng)
        if item.id in ("interrupted_me", "let_me_finish"):
            return _scale(float(np.clip(4.6 - 1.2 * call.interruptions_per_min, 1, 5)), item, rng)
        return _scale(feeling, item, rng)
    if item.kind == "choice":  # the options read best first
        return item.options[int(np.clip(round((5 - feeling) / 4 * (len(item.options) - 1)), 0, len(item.options) - 1))]
    if item.kind == "text":
        if rng.random() < 0.4:
            return "" if not item.required else "Nothing to add."
        pool = (INTERRUPTING_COMMENTS if call.interruptions_per_min > 1.0 else
                SLOW_COMMENTS if feeling < 3 else QUICK_COMMENTS)
        return str(rng.choice(pool))
    return None


def _after_last(items: tuple[QuestionnaireItem, ...], labels: dict[str, str], liked: dict[str, float], rng) -> dict:
    order = sorted(labels, key=lambda label: -(liked[labels[label]] + rng.normal(0, 0.4)))
    answers = {}
    for item in items:
        if item.kind == "rank":
            answers[item.id] = order
        elif item.kind == "pick":
            answers[item.id] = order[0]
        elif item.kind == "scale":
            answers[item.id] = _scale(float(np.mean(list(liked.values()))), item, rng)
        elif item.kind == "choice":
            answers[item.id] = item.options[0]
    return answers


def demo_responses(questionnaire: Questionnaire, calls: list[DemoCall], seed: int = 0) -> list[dict]:
    """The responses (QuestionnaireResponse fields) of the calls' participants: one after each
    call, and one after their last call where they met two systems or more. `calls` in the order
    each participant made them."""
    rng = np.random.default_rng(seed)
    by_participant: dict[int, list[DemoCall]] = defaultdict(list)
    for call in calls:
        by_participant[call.participant_id].append(call)
    responses = []
    for participant_id, own in by_participant.items():
        labels = {f"system-{n}": call.system for n, call in enumerate(own, 1)}
        liked: dict[str, list[float]] = defaultdict(list)
        for call in own:
            feeling = call_feeling(call, rng)
            liked[call.system].append(feeling)
            answers = {item.id: _item_answer(item, call, feeling, rng) for item in questionnaire.after_call}
            answers = {item: value for item, value in answers.items() if value not in (None, "")}
            responses.append({"participant_id": participant_id, "session_id": call.session_id,
                              "part": f"call:{call.session_id}", "answers": answers, "systems": labels})
        if len(set(labels.values())) >= 2 and questionnaire.after_last:
            means = {system: float(np.mean(v)) for system, v in liked.items()}
            responses.append({"participant_id": participant_id, "session_id": None, "part": "after_last",
                              "answers": _after_last(questionnaire.after_last, labels, means, rng),
                              "systems": labels})
    return responses


def store_demo_answers(session: Session, study, calls: list[DemoCall], seed: int = 0) -> int:
    """Store the demo responses to the study's questionnaire that the database lacks (a
    participant's part answered already is left as it is); returns how many were stored."""
    n_systems = len(session.exec(select(DialogueSystem.id).where(DialogueSystem.study_id == study.id)).all())
    settings = stored_settings(study.name, study.title or study.name, study.config or {})
    questionnaire = settings.call_questionnaire(n_systems)
    participants = sorted({call.participant_id for call in calls})
    have = set(session.exec(select(QuestionnaireResponse.participant_id, QuestionnaireResponse.part)
                            .where(QuestionnaireResponse.participant_id.in_(participants))).all())
    stored = 0
    for response in demo_responses(questionnaire, calls, seed):
        if (response["participant_id"], response["part"]) in have:
            continue
        session.add(QuestionnaireResponse(**response))
        stored += 1
    session.flush()
    return stored


def recorded_call(session_id: int, participant_id: int, system: str, audio: np.ndarray,
                  sample_rate: int) -> DemoCall:
    """A recorded call (audio (2, n): participant, system) as the demo's answers read it: its
    median reply latency, and the system's starts while the participant spoke per minute."""
    latencies, _ = reply_latencies(audio[0], audio[1])
    talk = active_segments(audio[0])
    starts = [start for start, _ in active_segments(audio[1])]
    cut_in = sum(any(s < start < e - 0.3 for s, e in talk) for start in starts)
    minutes = audio.shape[1] / sample_rate / 60
    return DemoCall(session_id, participant_id, system, float(np.median(latencies)) if latencies else None,
                    cut_in / minutes if minutes else 0.0)


def simulated_calls(session: Session, study_id: int) -> list[DemoCall]:
    """The study's sessions with a stored voice activity (analysis.demo_study's simulated ones),
    in the order they were made: the system's mean gap before its turns and its interruptions
    per minute, from their statistics."""
    rows = session.exec(
        select(ConversationSession.id, ConversationSession.participant_id, DialogueSystem.name)
        .join(DialogueSystem, DialogueSystem.id == ConversationSession.system_id)
        .where(DialogueSystem.study_id == study_id).order_by(ConversationSession.started_at, ConversationSession.id)
    ).all()
    activity = dict(session.exec(select(AnalysisResult.subject, AnalysisResult.result).where(
        AnalysisResult.kind == "voice-activity",
        AnalysisResult.subject.in_([f"session:{row[0]}" for row in rows]))).all()) if rows else {}
    rows = [(i, p, system, activity[f"session:{i}"]) for i, p, system in rows if f"session:{i}" in activity]
    calls = []
    for session_id, participant_id, system, found in rows:
        conv = conversation_from_json(found)
        stats = recording_statistics(conv, include_events=False)
        own = list(stats["speakers"].values())[1]  # the simulated system speaks on channel 1
        gaps = own["counts"]["gap"]
        calls.append(DemoCall(session_id, participant_id, system, own["durations_s"]["gap"] / gaps if gaps else None,
                              own["per_minute"]["interruption"]))
    return calls

"""Talking Turns timing metrics of a dialogue system (sections 4.4-4.8) and the single-label
confusion matrix (section 4.9).

Inputs per recording are plain arrays, so every rule is testable without a model:
  labels (N,)       L^dialogue, the label (index into LABELS) of every 40 ms chunk,
  turn_owner (N,)   whose turn it is after chunk i (floor holder, kept through pauses and gaps),
  speaking (2, N)   voice activity per speaker,
  probs (N, 5)      the judge's distribution of chunk i's label given chunks < i.
With S the system's channel and H = 1 - S the human's, the instances of chunk i are:
  (a) speak_up       i-1 in TURN^H, the previous `pause_chunks` chunks NA, L_i in {T, C}:
                     the system speaks up (T) or lets the human continue (C);
                     judge T iff p(T) - p(C) > threshold.
  (b) backchannel    i-1 in TURN^H, H speaking at i-1, L_{i-1} != BC: the system backchannels
                     (L_i = BC) or not; judge BC iff p(BC) > threshold.
  (c) interrupt      i-1 in TURN^H, L_{i-1} = C with H speaking alone, L_i in {I, C}: the system
                     interrupts (I) or not (C); judge I iff p(I) - p(C) > threshold.
  (d) convey_turn    (a) with the roles swapped: i-1 in TURN^S after a pause, the human speaks up
                     (T) or lets the system continue (C); judge T iff p(T) - p(C) > threshold.
  (e) handle_interruption  i-1 in TURN^S, the previous `interruption_chunks` chunks I (the human
                     is interrupting the system), L_i in {T, C}: the human takes the floor (T) or
                     the system keeps it (C); judge T iff p(T) - p(C) > threshold.

Agreement = the judge's label equals the decision actually made, reported separately for each
decision ("speaks up" / "lets continue", ...). Predictions start after `min_context_chunks`
chunks (0.2 s, as in the reference recipe). A human-human conversation is scored with each
speaker in turn as the "system" (the human reference of Table 6).

Intervals are at the unit that was sampled: the chunks of one session are strongly dependent
(one pause gives several instances, one system's habit gives all of a session's), so the pooled
agreement's 95 % interval comes from a bootstrap over sessions (conversations for the human
reference), not from a binomial interval over instances; the instance count is reported as a
count. With fewer than two sessions there is no interval (None); where every session agrees
fully (or not at all), Wilson's interval over the sessions (turntaking.intervals.proportion_interval).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from judge.labels import chunk_states
from judge.thresholds import LABEL_NAMES, MetricThresholds, OperatingPoints, hard_labels
from turntaking.events import EventParams
from turntaking.intervals import interval_label, proportion_interval

C, BC, T, I, NA = (LABEL_NAMES.index(x) for x in ("C", "BC", "T", "I", "NA"))


@dataclass(frozen=True)
class Metric:
    name: str
    title: str
    positive: int  # label of the positive decision; the negative one is C, or "not BC" for (b)
    decisions: tuple[str, str]  # (positive, negative) decision names
    score: str  # "T-C", "I-C" or "BC": what the judge thresholds


METRICS = (
    Metric("speak_up", "(a) When should the system speak up?", T, ("speaks up", "lets continue"), "T-C"),
    Metric("backchannel", "(b) When should the system backchannel?", BC, ("backchannels", "does not backchannel"), "BC"),
    Metric("interrupt", "(c) When should the system interrupt?", I, ("interrupts", "does not interrupt"), "I-C"),
    Metric("convey_turn", "(d) Does the system convey when the user can speak up?", T,
           ("user speaks up", "user lets system continue"), "T-C"),
    Metric("handle_interruption", "(e) Does the system handle user interruptions?", T,
           ("user takes the floor", "user does not take the floor"), "T-C"),
)
METRIC_BY_NAME = {m.name: m for m in METRICS}


@dataclass(frozen=True)
class InstanceParams:
    pause_chunks: int = 3  # a pause: the previous 3 chunks (120 ms) were NA
    interruption_chunks: int = 3  # (e) looks at overlaps that lasted 3 chunks of I
    min_context_chunks: int = 5  # judge predictions start at 0.2 s

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class Instances:
    """One metric's instances in one recording."""

    chunks: np.ndarray  # chunk index i
    positive: np.ndarray  # bool: the decision made was the positive one (T / BC / I)
    scores: np.ndarray  # the judge's score at i (p(T) - p(C), p(BC) or p(I) - p(C)); nan without probs


def _run_of(labels: np.ndarray, label: int, length: int) -> np.ndarray:
    """(N,) bool: chunks i whose previous `length` chunks all have `label`."""
    n = len(labels)
    out = np.zeros(n, dtype=bool)
    if length <= 0 or n <= length:
        return out
    hits = (labels == label).astype(np.int64)
    run = np.convolve(hits, np.ones(length, dtype=np.int64), mode="valid")  # run[j] = sum labels[j:j+length]
    out[length:] = run[: n - length] == length
    return out


def select_instances(labels, turn_owner, speaking, system: int, params: InstanceParams = InstanceParams()):
    """{metric name: (chunk indices, positive decision bool)} for the system on channel `system`."""
    if system not in (0, 1):
        raise ValueError(f"system channel must be 0 or 1, got {system}")
    labels = np.asarray(labels)
    owner = np.asarray(turn_owner)
    speaking = np.asarray(speaking, dtype=bool)
    human = 1 - system
    n = len(labels)
    prev = np.concatenate([[NA], labels[:-1]]) if n else labels
    prev_owner = np.concatenate([[-1], owner[:-1]]) if n else owner
    prev_speaking = np.concatenate([np.zeros((2, 1), dtype=bool), speaking[:, :-1]], axis=1)
    eligible = np.arange(n) >= max(params.min_context_chunks, 1)
    human_turn = eligible & (prev_owner == human)
    system_turn = eligible & (prev_owner == system)
    paused = _run_of(labels, NA, params.pause_chunks)
    t_or_c = (labels == T) | (labels == C)
    masks = {
        "speak_up": (human_turn & paused & t_or_c, labels == T),
        "backchannel": (human_turn & prev_speaking[human] & (prev != BC), labels == BC),
        "interrupt": (human_turn & (prev == C) & prev_speaking[human] & ~prev_speaking[system]
                      & ((labels == I) | (labels == C)), labels == I),
        "convey_turn": (system_turn & paused & t_or_c, labels == T),
        "handle_interruption": (system_turn & _run_of(labels, I, params.interruption_chunks) & t_or_c, labels == T),
    }
    return {name: (np.flatnonzero(m), pos[m]) for name, (m, pos) in masks.items()}


def judge_scores(probs: np.ndarray, metric: str, chunks: np.ndarray) -> np.ndarray:
    p = np.asarray(probs, dtype=float)[chunks]
    kind = METRIC_BY_NAME[metric].score
    if kind == "BC":
        return p[:, BC]
    other = T if kind == "T-C" else I
    return p[:, other] - p[:, C]


def recording_instances(labels, turn_owner, speaking, probs, system: int,
                        params: InstanceParams = InstanceParams()) -> dict[str, Instances]:
    """Instances of every metric with the judge's scores (probs rows beyond N are ignored)."""
    n = min(len(labels), len(probs))
    selected = select_instances(np.asarray(labels)[:n], np.asarray(turn_owner)[:n],
                                np.asarray(speaking)[:, :n], system, params)
    return {name: Instances(chunks, positive, judge_scores(probs, name, chunks))
            for name, (chunks, positive) in selected.items()}


def _merge(sessions: list[dict[str, Instances]], metric: str) -> tuple[np.ndarray, np.ndarray]:
    pos = [s[metric].positive for s in sessions]
    scores = [s[metric].scores for s in sessions]
    return (np.concatenate(pos) if pos else np.zeros(0, bool)), (np.concatenate(scores) if scores else np.zeros(0))


def _percent(interval) -> list[float] | None:
    return None if interval is None else [100.0 * interval[0], 100.0 * interval[1]]


def summarize_metric(sessions: list[dict[str, Instances]], metric: str, threshold: float,
                     confidence: float = 0.95, unit: str = "sessions") -> dict:
    """Decision counts (Table 2), pooled agreement per decision with its interval by a bootstrap
    over sessions, and the mean of the per-session agreements with its bootstrap interval
    (Fig. 3 / Table 7). `unit` names what a session is ("conversations" for the reference)."""
    spec = METRIC_BY_NAME[metric]
    positive, scores = _merge(sessions, metric)
    judged = scores > threshold
    n = len(positive)
    out = {"title": spec.title, "threshold": threshold, "instances": n, "decisions": {}, "agreement": {}}
    for name, is_pos in zip(spec.decisions, (True, False)):
        chosen = positive == is_pos
        count = int(chosen.sum())
        agree = int((judged[chosen] == is_pos).sum())
        session_agree, session_count = [], []
        for s in sessions:
            inst = s[metric]
            sel = inst.positive == is_pos
            if sel.any():
                session_agree.append(int(((inst.scores[sel] > threshold) == is_pos).sum()))
                session_count.append(int(sel.sum()))
        per_session = [a / c for a, c in zip(session_agree, session_count)]
        out["decisions"][name] = {"count": count, "percent": 100.0 * count / n if n else None}
        out["agreement"][name] = {
            "agree": agree,
            "n": count,
            "percent": 100.0 * agree / count if count else None,
            "sessions": len(per_session),
            "ci_95_percent": _percent(proportion_interval(session_agree, session_count, confidence)),
            "ci_unit": interval_label(len(per_session), unit),
            "session_mean_percent": 100.0 * float(np.mean(per_session)) if per_session else None,
            "session_ci_95": _percent(proportion_interval(per_session, np.ones(len(per_session)), confidence)),
        }
    return out


def confusion_matrix(labels, turn_owner, probs, system: int, points: OperatingPoints = OperatingPoints(),
                     params: InstanceParams = InstanceParams()) -> np.ndarray:
    """(5, 5) counts over the system's decisions (chunks i with i-1 in TURN^human): rows the judge's
    hard label L^gen (the pseudo ground truth), columns the label L^dialogue that happened."""
    n = min(len(labels), len(probs))
    labels = np.asarray(labels)[:n]
    owner = np.asarray(turn_owner)[:n]
    prev_owner = np.concatenate([[-1], owner[:-1]]) if n else owner
    chosen = (np.arange(n) >= max(params.min_context_chunks, 1)) & (prev_owner == 1 - system)
    gen = hard_labels(np.asarray(probs)[:n][chosen], points)
    matrix = np.zeros((5, 5), dtype=np.int64)
    np.add.at(matrix, (gen, labels[chosen]), 1)
    return matrix


def confusion_summary(matrix: np.ndarray) -> dict:
    total = int(matrix.sum())
    percent = (100.0 * matrix / total) if total else np.zeros_like(matrix, dtype=float)
    return {
        "labels": list(LABEL_NAMES),
        "rows": "judge label (L^gen)",
        "columns": "decision made (L^dialogue)",
        "counts": matrix.tolist(),
        "percent": np.round(percent, 3).tolist(),
        "total": total,
    }


def summarize(sessions: list[dict[str, Instances]], thresholds: MetricThresholds = MetricThresholds(),
              confusion: np.ndarray | None = None, unit: str = "sessions") -> dict:
    """The metrics report over several recordings (sessions; `unit` says what they are)."""
    report = {"sessions": len(sessions), "interval_unit": unit, "metrics": {}}
    for spec in METRICS:
        report["metrics"][spec.name] = summarize_metric(sessions, spec.name, getattr(thresholds, spec.name),
                                                        unit=unit)
    if confusion is not None:
        report["confusion"] = confusion_summary(confusion)
    return report


def merge_instances(parts: list[dict[str, Instances]]) -> dict[str, Instances]:
    """One session's instances from several parts (e.g. both speakers' roles in a conversation)."""
    return {
        spec.name: Instances(
            np.concatenate([p[spec.name].chunks for p in parts]),
            np.concatenate([p[spec.name].positive for p in parts]),
            np.concatenate([p[spec.name].scores for p in parts]),
        )
        for spec in METRICS
    }


def conversation_instances(conv, predictions, systems=(0, 1), points: OperatingPoints = OperatingPoints(),
                           params: InstanceParams = InstanceParams(), states=None,
                           events: EventParams = EventParams()):
    """(instances of the conversation as one session, summed confusion matrix) with each channel
    in `systems` in the system role; `states` = judge.labels.chunk_states(conv, events) when given."""
    if states is None:
        states = chunk_states(conv, event_params=events)
    probs = predictions.label_probs
    parts = [recording_instances(states.labels, states.turn_owner, states.speaking, probs, s, params) for s in systems]
    confusion = sum(confusion_matrix(states.labels, states.turn_owner, probs, s, points, params) for s in systems)
    return merge_instances(parts), confusion

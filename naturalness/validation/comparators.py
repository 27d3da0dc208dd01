"""The reference table's context-free yardsticks, scored beside the registered scorers.

- Duration likelihood: every gap, pause, overlap and IPU of a clip (IPUs joined across 0.2 s)
  costs -log P(kind) - log P(duration bin | kind), 40 log-spaced bins 10 ms .. 30 s, add-half
  smoothing, histograms of training conversations. A clip scores the mean per event
  ("duration-likelihood/event") or the sum per second ("duration-likelihood/s").
- Naive rule: silences over 0.7 s plus overlaps per second of the clip, counted or timed. The
  timed reading is the one that fits the reference table's row (late and silenced answers 100 %).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from naturalness.score import NllScore
from turntaking.activity import load_conversation_json
from turntaking.events import classify_silences, inter_pausal_units, overlap_events

EDGES_S = np.exp(np.linspace(np.log(0.01), np.log(30.0), 41))
KINDS = ("gap", "pause", "overlap", "ipu")
IPU_JOIN_S = 0.2
NAIVE_SILENCE_S = 0.7


def clip_events(conv, join_s: float = IPU_JOIN_S) -> list[tuple[str, float]]:
    """(kind, duration s) of every gap, pause, overlap and IPU of a clip."""
    ipus = tuple(inter_pausal_units(conv.activity[k], join_s) for k in (0, 1))
    pauses, gaps = classify_silences(ipus, conv.duration)
    return ([("gap", e.duration) for e in gaps] + [("pause", e.duration) for e in pauses]
            + [("overlap", e.duration) for e in overlap_events(ipus)]
            + [("ipu", e - s) for k in (0, 1) for s, e in ipus[k]])


def fit_duration_histograms(conversations, join_s: float = IPU_JOIN_S) -> dict[str, np.ndarray]:
    """Each kind's count per duration bin (the bins of EDGES_S, plus one below and one above)."""
    hist = {k: np.zeros(len(EDGES_S) + 1) for k in KINDS}
    for conv in conversations:
        for kind, d in clip_events(conv, join_s):
            hist[kind][np.searchsorted(EDGES_S, d)] += 1
    return hist


def event_nlls(hist: dict[str, np.ndarray], events: list[tuple[str, float]]) -> list[float]:
    """-log P(kind) - log P(duration bin | kind) of every event, add-half smoothed.

    With one pause of 0.5 s seen and nothing else, a second such pause costs less than a gap:

    >>> hist = {k: np.zeros(len(EDGES_S) + 1) for k in KINDS}
    >>> hist["pause"][np.searchsorted(EDGES_S, 0.5)] = 1
    >>> pause, gap = event_nlls(hist, [("pause", 0.5), ("gap", 0.5)])
    >>> round(pause, 3), round(gap, 3)
    (3.379, 5.529)
    """
    total = sum(h.sum() for h in hist.values())
    return [float(-np.log((hist[k].sum() + 0.5) / (total + 0.5 * len(KINDS)))
                  - np.log((hist[k][np.searchsorted(EDGES_S, d)] + 0.5) / (hist[k].sum() + 0.5 * len(hist[k]))))
            for k, d in events]


def naive_rule_value(events: list[tuple[str, float]], duration_s: float, timed: bool) -> float:
    """Silences over 0.7 s and overlaps per second of the clip: counted, or their seconds summed.

    >>> events = [("gap", 1.0), ("pause", 0.3), ("overlap", 0.5), ("ipu", 4.0)]
    >>> naive_rule_value(events, 10.0, timed=False), naive_rule_value(events, 10.0, timed=True)
    (0.2, 0.15)
    """
    flagged = [d for kind, d in events if (kind in ("gap", "pause") and d > NAIVE_SILENCE_S) or kind == "overlap"]
    return (sum(flagged) if timed else len(flagged)) / duration_s


@dataclass(frozen=True)
class ComparatorScore(NllScore):
    """A yardstick's score of one clip (higher: less natural), in the scorer contract."""

    value: float

    scorer: ClassVar[str] = "comparator"

    @property
    def dialog_nll(self) -> float:
        return self.value


def duration_likelihood(hist: dict[str, np.ndarray], per_second: bool):
    """A clip file -> its duration-likelihood score (mean per event, or sum per second)."""
    def score(path) -> ComparatorScore:
        conv = load_conversation_json(path)
        nll = event_nlls(hist, clip_events(conv))
        return ComparatorScore(float(np.sum(nll)) / conv.duration if per_second else float(np.mean(nll)))

    return score


def naive_rule(timed: bool):
    """A clip file -> its naive-rule score."""
    def score(path) -> ComparatorScore:
        conv = load_conversation_json(path)
        return ComparatorScore(naive_rule_value(clip_events(conv), conv.duration, timed))

    return score

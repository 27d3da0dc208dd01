"""Judge thresholds: the metric decision rules, the single-label operating points, and tuning.

Reference values (Talking Turns A.4) are the defaults. `python -m judge tune` chooses them on
human-human validation data and writes them next to the checkpoint as CHECKPOINT.thresholds.json
(`thresholds_path`); the scorer loads that file when it exists.

Tuning, as in the paper (A.4, A.8):
- metric thresholds: swept over -0.5..0.5 (likelihood differences) or 0..1 (p(BC)) in 0.01 steps;
  the chosen value maximises the *balanced* agreement with the human decisions (mean of the
  agreement on positive and on negative decisions: the classes are very unbalanced, so plain
  agreement would favour never predicting BC or I). The sensitivity analysis reports, for each
  decision, the agreement at the chosen threshold and the margin of error z * sd / sqrt(n) of the
  agreement over the whole sweep (eq. 10).
- operating points: for each label, the threshold on its probability (0.05..0.95 in 0.05 steps)
  with the best one-vs-rest F1 against the true chunk labels.

Tuning and the judge's human reference use disjoint conversations: the validation conversations
are split in two halves by a hash of their number (`validation_half`), thresholds are tuned on the
"tuning" half and the human reference is scored on the "reference" half. The thresholds file lists
the conversations it was tuned on, and a human reference on any of them is refused
(`judge.reports.human_reference_report`), so a reference is never in-sample.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import numpy as np

from turntaking.intervals import margin_of_error
from turntaking.jsonfiles import JsonFileError, read_json

# sklearn.metrics is imported where it is used: it takes about half a second, which most commands never need.

LABEL_NAMES = ("C", "BC", "T", "I", "NA")  # judge.labels.LABELS, the model's output order
# Single-label evaluation checks the operating points in this order; argmax when none passes.
HARD_LABEL_PRIORITY = ("C", "NA", "I", "BC", "T")


class ThresholdsError(JsonFileError):
    """A thresholds file that cannot be used."""


@dataclass(frozen=True)
class MetricThresholds:
    speak_up: float = 0.0  # (a) judge T iff p(T) - p(C) > this
    backchannel: float = 0.1  # (b) judge BC iff p(BC) > this
    interrupt: float = -0.45  # (c) judge I iff p(I) - p(C) > this
    convey_turn: float = 0.0  # (d) judge T iff p(T) - p(C) > this
    handle_interruption: float = -0.1  # (e) judge T iff p(T) - p(C) > this


@dataclass(frozen=True)
class OperatingPoints:
    C: float = 0.2
    NA: float = 0.45
    I: float = 0.4
    BC: float = 0.4
    T: float = 0.4


@dataclass(frozen=True)
class JudgeThresholds:
    metrics: MetricThresholds = MetricThresholds()
    operating_points: OperatingPoints = OperatingPoints()
    source: str = "reference defaults (Talking Turns A.4)"
    tuned_on: tuple[str, ...] = ()  # conversation numbers the thresholds were tuned on (none: not known)

    def as_dict(self) -> dict:
        return {"metrics": asdict(self.metrics), "operating_points": asdict(self.operating_points), "source": self.source}


# Sweep ranges of A.8: differences of two likelihoods over [-0.5, 0.5], p(BC) over [0, 1].
DIFFERENCE_SWEEP = np.round(np.arange(-50, 51) * 0.01, 2)
PROBABILITY_SWEEP = np.round(np.arange(0, 101) * 0.01, 2)
OPERATING_POINT_SWEEP = np.round(np.arange(1, 20) * 0.05, 2)


HALVES = ("tuning", "reference", "all")
HALF_RULE = ("validation_half: a conversation is in the tuning half when the sha256 of its number "
             "(e.g. '4637') ends in an even hex digit, else in the reference half")


def validation_half(conv_id: str) -> str:
    """"tuning" or "reference": a conversation's half, from its number alone (so it does not move
    when other conversations are added or left out)."""
    digest = hashlib.sha256(str(conv_id).removeprefix("sw").encode()).hexdigest()
    return "tuning" if int(digest[-1], 16) % 2 == 0 else "reference"


def conversations_in_half(ids, half: str) -> list[str]:
    """The conversations of `ids` in `half` ("tuning", "reference", or "all"), in their order."""
    if half not in HALVES:
        raise ValueError(f"unknown half {half!r}: choose one of {', '.join(HALVES)}")
    return [i for i in ids if half == "all" or validation_half(i) == half]


def sweep_for(metric: str) -> np.ndarray:
    return PROBABILITY_SWEEP if metric == "backchannel" else DIFFERENCE_SWEEP


def thresholds_path(checkpoint) -> Path:
    """Where the tuned thresholds of a checkpoint live: next to it, CHECKPOINT.thresholds.json."""
    checkpoint = Path(checkpoint)
    return checkpoint.with_name(checkpoint.stem + ".thresholds.json")


def _from_section(cls, data, name: str, path):
    if not isinstance(data, dict):
        raise ThresholdsError(f"{path}: '{name}' must be an object")
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ThresholdsError(f"{path}: unknown {name} entries {', '.join(unknown)}")
    try:
        return cls(**{k: float(v) for k, v in data.items()})
    except (TypeError, ValueError):
        raise ThresholdsError(f"{path}: {name} values must be numbers") from None


def load_thresholds(path) -> JudgeThresholds:
    path = Path(path)
    data = read_json(path, "thresholds file", ThresholdsError)
    tuned_on = data.get("tuned_on", {})
    ids = tuned_on.get("conversation_ids", []) if isinstance(tuned_on, dict) else []
    if not isinstance(ids, list):
        raise ThresholdsError(f"{path}: tuned_on.conversation_ids must be a list")
    return JudgeThresholds(
        _from_section(MetricThresholds, data.get("metrics", {}), "metrics", path),
        _from_section(OperatingPoints, data.get("operating_points", {}), "operating_points", path),
        source=str(path),
        tuned_on=tuple(str(i).removeprefix("sw") for i in ids),
    )


def thresholds_for_checkpoint(checkpoint) -> JudgeThresholds:
    """The tuned thresholds next to `checkpoint`, or the reference defaults when there are none."""
    if checkpoint is not None and thresholds_path(checkpoint).is_file():
        return load_thresholds(thresholds_path(checkpoint))
    return JudgeThresholds()


def save_thresholds(thresholds: JudgeThresholds, path, extra: dict | None = None) -> Path:
    path = Path(path)
    data = thresholds.as_dict()
    data.update(extra or {})
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    return path


def hard_labels(probs: np.ndarray, points: OperatingPoints = OperatingPoints()) -> np.ndarray:
    """Single label per row: the first label in HARD_LABEL_PRIORITY whose probability exceeds its
    operating point, the argmax where none does."""
    probs = np.asarray(probs, dtype=float)
    out = probs.argmax(axis=1)
    decided = np.zeros(len(probs), dtype=bool)
    for name in HARD_LABEL_PRIORITY:
        k = LABEL_NAMES.index(name)
        hit = ~decided & (probs[:, k] > getattr(points, name))
        out[hit] = k
        decided |= hit
    return out


def agreement_over_sweep(scores: np.ndarray, positive: np.ndarray, sweep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Agreement on positive and on negative decisions at every threshold of the sweep."""
    scores = np.asarray(scores, dtype=float)
    positive = np.asarray(positive, dtype=bool)
    judged = scores[None, :] > sweep[:, None]
    pos = judged[:, positive].mean(axis=1) if positive.any() else np.full(len(sweep), np.nan)
    neg = (~judged[:, ~positive]).mean(axis=1) if (~positive).any() else np.full(len(sweep), np.nan)
    return pos, neg


def tune_metric_threshold(scores, positive, sweep: np.ndarray) -> dict:
    """Best threshold by balanced agreement, with the A.8 sensitivity analysis."""
    pos, neg = agreement_over_sweep(scores, positive, sweep)
    balanced = np.nanmean(np.stack([pos, neg]), axis=0) if len(sweep) else pos
    if np.all(np.isnan(balanced)):
        return {"threshold": None, "n_positive": 0, "n_negative": 0}
    best = int(np.nanargmax(balanced))
    positive = np.asarray(positive, dtype=bool)
    return {
        "threshold": float(sweep[best]),
        "balanced_agreement": float(balanced[best]),
        "agreement_positive": float(pos[best]),
        "agreement_negative": float(neg[best]),
        "margin_of_error_positive": margin_of_error(pos),
        "margin_of_error_negative": margin_of_error(neg),
        "n_positive": int(positive.sum()),
        "n_negative": int((~positive).sum()),
        "sweep": [float(v) for v in sweep],
        "sweep_agreement_positive": [float(v) for v in pos],
        "sweep_agreement_negative": [float(v) for v in neg],
    }


def tune_operating_points(probs: np.ndarray, labels: np.ndarray, sweep: np.ndarray = OPERATING_POINT_SWEEP):
    """(OperatingPoints, per-label report): each label's threshold with the best one-vs-rest F1."""
    from sklearn.metrics import f1_score
    probs = np.asarray(probs, dtype=float)
    labels = np.asarray(labels)
    chosen, report = {}, {}
    for k, name in enumerate(LABEL_NAMES):
        truth = labels == k
        f1s = [f1_score(truth, probs[:, k] > t, zero_division=0.0) for t in sweep]
        best = int(np.argmax(f1s))
        chosen[name] = float(sweep[best])
        report[name] = {"threshold": chosen[name], "f1": float(f1s[best]), "n_true": int(truth.sum())}
    return OperatingPoints(**chosen), report

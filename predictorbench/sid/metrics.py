"""SID-bench metrics: FIR, IRL and APT with a 50 ms tolerance.

Per clip, with gt = annotated break (total_nonbreak false) and pred = predicted break:
  no gt, no pred            penalty 0                        (true negative)
  no gt, pred               penalty = clip duration          (false alarm; counts in FIR)
  gt, no pred               penalty = duration - break_time  (miss)
  gt, pred, |pred - gt| <= tolerance   penalty 0             (true positive; |pred - gt| in IRL)
  gt, pred > gt + tolerance            penalty = pred - gt   (late detection)
  gt, pred < gt - tolerance            EARLY detection, which the SID-bench README leaves open.
      Our default, early_penalty="absolute": penalty = gt - pred, the same timing error as a late
      detection (symmetric with IRL's absolute error); it is neither a true positive (not in
      IRL) nor a false interruption (FIR counts non-break clips only). early_penalty="false_alarm"
      treats it as an interruption where none was due yet: penalty = the clip duration.
FIR = false alarms / non-break clips; IRL = mean |pred - gt| over true positives (None without
any); APT = mean penalty over all clips. All three: lower is better.
"""

from __future__ import annotations

from collections import Counter

TOLERANCE_S = 0.05
EARLY_PENALTIES = ("absolute", "false_alarm")
EPS = 1e-9


def clip_outcome(clip, pred: dict, tolerance: float = TOLERANCE_S, early_penalty: str = "absolute"):
    """(outcome, penalty, |error| or None) of one clip."""
    predicted = not pred["total_nonbreak"]
    if not clip.has_break:
        return ("false_alarm", clip.duration, None) if predicted else ("true_negative", 0.0, None)
    if not predicted:
        return "miss", clip.duration - clip.break_time, None
    diff = pred["break_time"] - clip.break_time
    if abs(diff) <= tolerance + EPS:
        return "true_positive", 0.0, abs(diff)
    if diff > 0:
        return "late", diff, None
    return "early", (clip.duration if early_penalty == "false_alarm" else -diff), None


def score(clips, predictions: dict, tolerance: float = TOLERANCE_S, early_penalty: str = "absolute") -> dict:
    if early_penalty not in EARLY_PENALTIES:
        raise ValueError(f"early_penalty must be one of {', '.join(EARLY_PENALTIES)}, not {early_penalty!r}")
    missing = [c.audio for c in clips if c.audio not in predictions]
    if missing:
        raise ValueError(f"{len(missing)} annotated clip(s) have no prediction, e.g. {missing[0]}")
    counts, penalties, errors = Counter(), [], []
    for clip in clips:
        outcome, penalty, error = clip_outcome(clip, predictions[clip.audio], tolerance, early_penalty)
        counts[outcome] += 1
        penalties.append(penalty)
        if error is not None:
            errors.append(error)
    n_nonbreak = sum(1 for c in clips if not c.has_break)
    return {
        "FIR": counts["false_alarm"] / n_nonbreak if n_nonbreak else None,
        "IRL": sum(errors) / len(errors) if errors else None,
        "APT": sum(penalties) / len(penalties) if penalties else None,
        "clips": len(clips), "break_clips": len(clips) - n_nonbreak, "nonbreak_clips": n_nonbreak,
        "outcomes": {k: counts[k] for k in ("true_positive", "late", "early", "miss", "false_alarm", "true_negative")},
    }


def report(splits: dict, predictions: dict, tolerance: float = TOLERANCE_S, early_penalty: str = "absolute") -> dict:
    """Overall metrics (FIR, IRL, APT at the top level) and the same per split."""
    every = [c for clips in splits.values() for c in clips]
    out = score(every, predictions, tolerance, early_penalty)
    out["per_split"] = {name: score(clips, predictions, tolerance, early_penalty) for name, clips in splits.items()}
    out["tolerance_s"] = tolerance
    out["early_penalty"] = early_penalty
    return out

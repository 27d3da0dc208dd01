"""Human judgments of natural vs perturbed clips (TurnNat Table II) and their agreement.

Input: one row per judgment (a pandas DataFrame) with the columns

    annotator, pair_id, type            who judged which pair (type: the perturbation type)
    choice                              "natural" or "perturbed": the clip judged more natural
    rating_natural, rating_perturbed    5-point naturalness ratings (1-5)
    artifact_natural, artifact_perturbed   5-point artifact ratings (artifact-control trials; else NaN)
    trial                               "formal", "artifact_control" or "attention"
    attention_passed                    bool for attention trials (else NaN)
    duration_s                          time spent on the trial

Formal trials give the preference, rating and agreement statistics; artifact-control trials the
artifact ratings; attention trials the per-annotator failure counts.
"""

from __future__ import annotations

import krippendorff
import numpy as np
import pandas as pd

from turntaking.intervals import mean_confidence_interval, wilson_interval

#: Krippendorff's alpha is computed at this level of measurement for 5-point ratings.
RATING_LEVEL = "ordinal"


def krippendorff_alpha(frame: pd.DataFrame, rater: str, unit: str, value: str, level: str = RATING_LEVEL) -> float:
    """Alpha over a long table (one row per rating); `level` 'nominal', 'ordinal', 'interval', 'ratio'."""
    table = frame.pivot_table(index=rater, columns=unit, values=value, aggfunc="first")
    data = table.to_numpy(dtype=float)
    # Alpha needs a unit rated by two raters at least (e.g. not left after excluding annotators).
    if (np.isfinite(data).sum(axis=0) < 2).all():
        return float("nan")
    return float(krippendorff.alpha(reliability_data=data, level_of_measurement=level))


def rating_long_table(formal: pd.DataFrame) -> pd.DataFrame:
    """One row per (annotator, clip) naturalness rating; a clip is (pair, side)."""
    parts = []
    for side in ("natural", "perturbed"):
        part = formal[["annotator", "pair_id", f"rating_{side}"]].rename(columns={f"rating_{side}": "rating"})
        part["clip"] = part["pair_id"].astype(str) + ":" + side
        parts.append(part)
    return pd.concat(parts, ignore_index=True)


def pair_majority(formal: pd.DataFrame) -> pd.Series:
    """(pair_id -> the choice most judgments of the pair made, or NaN on a tie), vectorised:
    thousands of pairs in milliseconds."""
    counts = formal.groupby(["pair_id", "choice"]).size().unstack(fill_value=0)
    if counts.empty:
        return pd.Series(dtype=object)
    top = counts.max(axis=1)
    tied = counts.eq(top, axis=0).sum(axis=1) > 1
    return counts.idxmax(axis=1).astype(object).where(~tied)


def majority_agreement(formal: pd.DataFrame) -> float:
    """Share of judgments that match their pair's majority choice (ties: no judgment matches)."""
    if not len(formal):
        return float("nan")
    majority = formal["pair_id"].map(pair_majority(formal))
    return float((formal["choice"] == majority).sum()) / len(formal)


def preference_summary(formal: pd.DataFrame, confidence: float = 0.95) -> dict:
    n = len(formal)
    natural = int((formal["choice"] == "natural").sum())
    low, high = wilson_interval(natural, n, confidence)
    diff = (formal["rating_natural"] - formal["rating_perturbed"]).dropna().to_numpy(float)
    mean, d_low, d_high = mean_confidence_interval(diff, confidence)
    return {
        "judgments": n,
        "pairs": int(formal["pair_id"].nunique()),
        "annotators": int(formal["annotator"].nunique()),
        "natural_preference": {"rate": natural / n if n else float("nan"), "ci_low": low, "ci_high": high},
        "mean_rating_difference": {"mean": mean, "ci_low": d_low, "ci_high": d_high},
        "majority_agreement": majority_agreement(formal),
        "krippendorff_alpha": krippendorff_alpha(rating_long_table(formal), "annotator", "clip", "rating"),
        "krippendorff_level": RATING_LEVEL,
    }


def artifact_summary(controls: pd.DataFrame, confidence: float = 0.95) -> dict:
    nat = controls["artifact_natural"].dropna().to_numpy(float)
    pert = controls["artifact_perturbed"].dropna().to_numpy(float)
    diff = (controls["artifact_perturbed"] - controls["artifact_natural"]).dropna().to_numpy(float)
    mean, low, high = mean_confidence_interval(diff, confidence)
    return {
        "trials": int(len(controls)),
        "natural_mean": float(nat.mean()) if len(nat) else float("nan"),
        "perturbed_mean": float(pert.mean()) if len(pert) else float("nan"),
        "difference": {"mean": mean, "ci_low": low, "ci_high": high},
    }


def per_annotator(judgments: pd.DataFrame) -> pd.DataFrame:
    """Per annotator: trials, agreement with the pair majority, median time, attention failures."""
    formal = judgments[judgments["trial"] == "formal"]
    majority = pair_majority(formal).dropna().to_dict()
    rows = []
    for annotator, group in judgments.groupby("annotator"):
        own = group[group["trial"] == "formal"]
        voted = own[own["pair_id"].isin(majority)]
        attention = group[group["trial"] == "attention"]
        rows.append(
            {
                "annotator": annotator,
                "trials": int(len(group)),
                "formal_trials": int(len(own)),
                "agreement_with_majority": (
                    float((voted["choice"] == voted["pair_id"].map(majority)).mean()) if len(voted) else float("nan")
                ),
                "median_trial_s": float(group["duration_s"].median()),
                "attention_checks": int(len(attention)),
                "attention_failures": int((attention["attention_passed"] == False).sum()),  # noqa: E712
            }
        )
    return pd.DataFrame(rows)


def human_evaluation_summary(judgments: pd.DataFrame, exclude_annotators=(), confidence: float = 0.95) -> dict:
    """TurnNat Table II, overall and per perturbation type, with annotators optionally excluded."""
    kept = judgments[~judgments["annotator"].isin(list(exclude_annotators))]
    formal = kept[kept["trial"] == "formal"]
    controls = kept[kept["trial"] == "artifact_control"]
    summary = preference_summary(formal, confidence) if len(formal) else {"judgments": 0}
    summary["artifact"] = artifact_summary(controls, confidence) if len(controls) else None
    summary["per_type"] = {
        kind: preference_summary(group, confidence) for kind, group in formal.groupby("type") if len(group)
    }
    summary["excluded_annotators"] = sorted(map(str, exclude_annotators))
    return summary

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

Agreement never counts a judgment's own vote: each judgment is compared with the majority of the
*other* judgments of its pair (with K = 3 a majority that includes the own vote agrees with it at
least 2 times in 3 by construction, and a coin-flipper at about 1 - q/2). When the others split
evenly the judgment is counted as a tie, not as agreement or disagreement. Krippendorff's alpha
is given for what annotators were asked per pair: the forced choice (nominal) and the rating
difference natural - perturbed (interval); the alpha of the pooled 1-5 ratings of natural and
perturbed clips is kept under a name that says so, since it rises with the perturbation effect
as much as with reliability.
"""

from __future__ import annotations

import krippendorff
import numpy as np
import pandas as pd

from turntaking.intervals import mean_confidence_interval, wilson_interval

#: Level of measurement of the pooled 1-5 ratings' alpha.
RATING_LEVEL = "ordinal"


def krippendorff_alpha(frame: pd.DataFrame, rater: str, unit: str, value: str, level: str = RATING_LEVEL) -> float:
    """Alpha over a long table (one row per rating); `level` 'nominal', 'ordinal', 'interval', 'ratio'.

    alpha = 1 - D_observed / D_expected: 1 when raters agree on every unit, nan when every
    rating is the same (nothing to disagree about).

    >>> ratings = pd.DataFrame({"rater": list("aaabbb"), "unit": [1, 2, 3] * 2, "value": [1, 2, 3, 1, 2, 3]})
    >>> krippendorff_alpha(ratings, "rater", "unit", "value", "interval")
    1.0
    >>> krippendorff_alpha(ratings.assign(value=4), "rater", "unit", "value", "interval")
    nan
    """
    table = frame.pivot_table(index=rater, columns=unit, values=value, aggfunc="first")
    data = table.to_numpy(dtype=float)
    # Alpha needs a unit rated by two raters at least (e.g. not left after excluding annotators).
    if (np.isfinite(data).sum(axis=0) < 2).all():
        return float("nan")
    # Nor is it defined when every rating is the same value (no expected disagreement).
    if len(np.unique(data[np.isfinite(data)])) < 2:
        return float("nan")
    return float(krippendorff.alpha(reliability_data=data, level_of_measurement=level))


def rating_long_table(formal: pd.DataFrame) -> pd.DataFrame:
    """One row per (annotator, clip) naturalness rating; a clip is (pair, side).

    >>> formal = pd.DataFrame({"annotator": list("abcabc"), "pair_id": ["p1"] * 3 + ["p2"] * 3,
    ...                        "choice": ["natural"] * 4 + ["perturbed"] * 2,
    ...                        "rating_natural": [5, 4, 4, 4, 2, 3], "rating_perturbed": [2, 2, 3, 3, 4, 2]})
    >>> long = rating_long_table(formal)
    >>> len(long), sorted(set(long["clip"]))
    (12, ['p1:natural', 'p1:perturbed', 'p2:natural', 'p2:perturbed'])
    """
    parts = []
    for side in ("natural", "perturbed"):
        part = formal[["annotator", "pair_id", f"rating_{side}"]].rename(columns={f"rating_{side}": "rating"})
        part["clip"] = part["pair_id"].astype(str) + ":" + side
        parts.append(part)
    return pd.concat(parts, ignore_index=True)


def others_majority(formal: pd.DataFrame) -> pd.Series:
    """Per judgment (formal's index): the choice most of the *other* judgments of its pair made,
    "tie" when they split evenly, NaN when nobody else judged the pair.

    Pair p1: all three chose the natural clip; p2: a chose it, b and c the perturbed one.

    >>> formal = pd.DataFrame({"annotator": list("abcabc"), "pair_id": ["p1"] * 3 + ["p2"] * 3,
    ...                        "choice": ["natural"] * 4 + ["perturbed"] * 2})
    >>> others_majority(formal).tolist()
    ['natural', 'natural', 'natural', 'perturbed', 'tie', 'tie']
    """
    pair = formal["pair_id"]
    natural = (formal["choice"] == "natural").astype(int)
    perturbed = (formal["choice"] == "perturbed").astype(int)
    others_natural = natural.groupby(pair).transform("sum") - natural
    others_perturbed = perturbed.groupby(pair).transform("sum") - perturbed
    majority = pd.Series(np.where(others_natural > others_perturbed, "natural",
                                  np.where(others_perturbed > others_natural, "perturbed", "tie")),
                         index=formal.index, dtype=object)
    return majority.where(others_natural + others_perturbed > 0)


def others_majority_agreement(formal: pd.DataFrame) -> dict:
    """Share of judgments that match the majority of their pair's other judgments, over the
    judgments whose others have a majority; how many were compared, tied, or judged alone.

    agreement = matching judgments / judgments compared (ties left out): 3 of 4 below.

    >>> formal = pd.DataFrame({"annotator": list("abcabc"), "pair_id": ["p1"] * 3 + ["p2"] * 3,
    ...                        "choice": ["natural"] * 4 + ["perturbed"] * 2})
    >>> others_majority_agreement(formal)
    {'agreement': 0.75, 'compared': 4, 'ties': 2, 'judged_alone': 0}
    """
    majority = others_majority(formal)
    compared = majority.isin(["natural", "perturbed"])
    n = int(compared.sum())
    agree = int((formal["choice"][compared] == majority[compared]).sum())
    return {"agreement": agree / n if n else float("nan"), "compared": n,
            "ties": int((majority == "tie").sum()), "judged_alone": int(majority.isna().sum())}


def choice_alpha(formal: pd.DataFrame) -> float:
    """Krippendorff's alpha (nominal) of the forced choice: unit = pair, value = which clip was
    chosen as more natural.

    Values 1 1 1 | 1 0 0: D_o = 2/6 (p2's disagreeing pairs), D_e = 2 * 4 * 2 / (6 * 5), alpha = 0.375.

    >>> formal = pd.DataFrame({"annotator": list("abcabc"), "pair_id": ["p1"] * 3 + ["p2"] * 3,
    ...                        "choice": ["natural"] * 4 + ["perturbed"] * 2})
    >>> choice_alpha(formal)
    0.375
    """
    return krippendorff_alpha(formal.assign(chose_natural=(formal["choice"] == "natural").astype(float)),
                              "annotator", "pair_id", "chose_natural", "nominal")


def rating_difference_alpha(formal: pd.DataFrame) -> float:
    """Krippendorff's alpha (interval) of each pair's rating difference, natural - perturbed.

    >>> formal = pd.DataFrame({"annotator": list("abcabc"), "pair_id": ["p1"] * 3 + ["p2"] * 3,
    ...                        "choice": ["natural"] * 4 + ["perturbed"] * 2,
    ...                        "rating_natural": [5, 4, 4, 4, 2, 3], "rating_perturbed": [2, 2, 3, 3, 4, 2]})
    >>> round(rating_difference_alpha(formal), 3)  # differences 3 2 1 | 1 -2 1
    0.286
    """
    return krippendorff_alpha(formal.assign(difference=formal["rating_natural"] - formal["rating_perturbed"]),
                              "annotator", "pair_id", "difference", "interval")


def preference_summary(formal: pd.DataFrame, confidence: float = 0.95) -> dict:
    """TurnNat Table II's row of formal judgments: how often the natural clip was preferred
    (Wilson interval), the mean rating difference natural - perturbed (normal interval), the
    agreement with the others' majority and the alphas.

    >>> formal = pd.DataFrame({"annotator": list("abcabc"), "pair_id": ["p1"] * 3 + ["p2"] * 3,
    ...                        "choice": ["natural"] * 4 + ["perturbed"] * 2,
    ...                        "rating_natural": [5, 4, 4, 4, 2, 3], "rating_perturbed": [2, 2, 3, 3, 4, 2]})
    >>> summary = preference_summary(formal)
    >>> round(summary["natural_preference"]["rate"], 3), summary["mean_rating_difference"]["mean"]
    (0.667, 1.0)
    """
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
        "others_majority_agreement": others_majority_agreement(formal),
        "alpha_forced_choice": choice_alpha(formal),
        "alpha_rating_difference": rating_difference_alpha(formal),
        "alpha_pooled_ratings_natural_and_perturbed": krippendorff_alpha(
            rating_long_table(formal), "annotator", "clip", "rating", RATING_LEVEL),
    }


def artifact_summary(controls: pd.DataFrame, confidence: float = 0.95) -> dict:
    """Artifact ratings of the artifact-control trials: mean per side, and the mean difference
    perturbed - natural with its normal interval.

    >>> controls = pd.DataFrame({"artifact_natural": [1.0, 2.0, 1.0], "artifact_perturbed": [3.0, 3.0, 2.0]})
    >>> summary = artifact_summary(controls)
    >>> round(summary["natural_mean"], 3), round(summary["difference"]["mean"], 3)
    (1.333, 1.333)
    """
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
    """Per annotator: trials; agreement with the majority of the others who judged the same pairs
    (own vote left out), over how many judgments, and how many met a tie; the share of formal
    judgments whose ratings contradict the annotator's own choice (the chosen clip rated lower);
    median time; attention checks and failures.

    a's p2 choice goes against the others (1 of 2 agree); c chose p2's perturbed clip yet rated
    it lower (3 vs 2): half of c's ratings contradict its choices.

    >>> formal = pd.DataFrame({"annotator": list("abcabc"), "pair_id": ["p1"] * 3 + ["p2"] * 3,
    ...                        "choice": ["natural"] * 4 + ["perturbed"] * 2,
    ...                        "rating_natural": [5, 4, 4, 4, 2, 3], "rating_perturbed": [2, 2, 3, 3, 4, 2]})
    >>> table = per_annotator(formal.assign(trial="formal", duration_s=10.0, attention_passed=float("nan")))
    >>> table["agreement_with_others_majority"].tolist(), table["ratings_contradict_choice"].tolist()
    ([0.5, 1.0, 1.0], [0.0, 0.0, 0.5])
    """
    judgments = judgments.reset_index(drop=True)
    formal = judgments[judgments["trial"] == "formal"]
    majority = others_majority(formal)
    compared = majority.isin(["natural", "perturbed"])
    agrees = (formal["choice"] == majority)[compared]
    chose_natural = formal["choice"] == "natural"
    chosen = formal["rating_natural"].where(chose_natural, formal["rating_perturbed"])
    other = formal["rating_perturbed"].where(chose_natural, formal["rating_natural"])
    contradicts = (chosen < other)[chosen.notna() & other.notna()]
    rows = []
    for annotator, group in judgments.groupby("annotator"):
        own = group.index[group["trial"] == "formal"]
        own_agrees = agrees[agrees.index.isin(own)]
        own_contradicts = contradicts[contradicts.index.isin(own)]
        attention = group[group["trial"] == "attention"]
        rows.append(
            {
                "annotator": annotator,
                "trials": int(len(group)),
                "formal_trials": int(len(own)),
                "agreement_with_others_majority": float(own_agrees.mean()) if len(own_agrees) else float("nan"),
                "compared_with_others": int(len(own_agrees)),
                "others_tied": int((majority[majority.index.isin(own)] == "tie").sum()),
                "ratings_contradict_choice": float(own_contradicts.mean()) if len(own_contradicts) else float("nan"),
                "median_trial_s": float(group["duration_s"].median()),
                "attention_checks": int(len(attention)),
                "attention_failures": int((attention["attention_passed"] == False).sum()),  # noqa: E712
            }
        )
    return pd.DataFrame(rows)


def human_evaluation_summary(judgments: pd.DataFrame, exclude_annotators=(), confidence: float = 0.95) -> dict:
    """TurnNat Table II, overall and per perturbation type, with annotators optionally excluded.

    >>> formal = pd.DataFrame({"annotator": list("abcabc"), "pair_id": ["p1"] * 3 + ["p2"] * 3,
    ...                        "choice": ["natural"] * 4 + ["perturbed"] * 2,
    ...                        "rating_natural": [5, 4, 4, 4, 2, 3], "rating_perturbed": [2, 2, 3, 3, 4, 2]})
    >>> judgments = formal.assign(trial="formal", type=["shift"] * 3 + ["pause"] * 3)
    >>> round(human_evaluation_summary(judgments)["per_type"]["pause"]["natural_preference"]["rate"], 3)
    0.333
    >>> human_evaluation_summary(judgments, exclude_annotators=["a"])["natural_preference"]["rate"]
    0.5
    """
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

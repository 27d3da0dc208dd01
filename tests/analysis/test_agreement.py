"""Human-evaluation statistics against values worked out by hand."""

import math

import numpy as np
import pandas as pd
import pytest

from analysis.agreement import human_evaluation_summary, krippendorff_alpha, majority_agreement, per_annotator

# Krippendorff (2011), "Computing Krippendorff's alpha-reliability": 4 observers x 12 units.
TEXTBOOK = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
]


def long_table(matrix):
    return pd.DataFrame(
        [{"rater": r, "unit": u, "value": v} for r, row in enumerate(matrix) for u, v in enumerate(row) if v is not None]
    )


@pytest.mark.parametrize("level, expected", [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849)])
def test_krippendorff_alpha_textbook_example(level, expected):
    assert krippendorff_alpha(long_table(TEXTBOOK), "rater", "unit", "value", level) == pytest.approx(expected, abs=5e-4)


def judgment(annotator, pair, kind, choice, rn, rp, trial="formal", an=np.nan, ap=np.nan, passed=np.nan, t=20.0):
    return dict(annotator=annotator, pair_id=pair, type=kind, choice=choice, rating_natural=rn, rating_perturbed=rp,
                artifact_natural=an, artifact_perturbed=ap, trial=trial, attention_passed=passed, duration_s=t)


@pytest.fixture
def judgments():
    rows = [
        judgment("a", "p1", "late", "natural", 4, 2), judgment("b", "p1", "late", "natural", 5, 3),
        judgment("c", "p1", "late", "perturbed", 3, 4),
        judgment("a", "p2", "late", "natural", 4, 3), judgment("b", "p2", "late", "natural", 4, 2),
        judgment("c", "p2", "late", "natural", 5, 4),
        judgment("a", "p3", "early", "perturbed", 3, 3), judgment("b", "p3", "early", "perturbed", 2, 4),
        judgment("c", "p3", "early", "natural", 4, 2),
        judgment("a", "c1", "artifact_control", None, np.nan, np.nan, "artifact_control", an=2, ap=3),
        judgment("b", "c1", "artifact_control", None, np.nan, np.nan, "artifact_control", an=1, ap=1),
        judgment("c", "x1", "attention", "natural", 5, 1, "attention", passed=False, t=3.0),
        judgment("a", "x1", "attention", "natural", 5, 1, "attention", passed=True, t=25.0),
    ]
    return pd.DataFrame(rows)


def wilson_by_hand(k, n, z=1.959963984540054):
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def test_preference_rate_with_wilson_interval(judgments):
    s = human_evaluation_summary(judgments)
    assert s["judgments"] == 9 and s["pairs"] == 3 and s["annotators"] == 3
    pref = s["natural_preference"]
    assert pref["rate"] == pytest.approx(6 / 9)
    low, high = wilson_by_hand(6, 9)
    assert (pref["ci_low"], pref["ci_high"]) == pytest.approx((low, high), abs=1e-9)


def test_mean_rating_difference_with_normal_interval(judgments):
    diffs = np.array([2, 2, -1, 1, 2, 1, 0, -2, 2], float)
    s = human_evaluation_summary(judgments)["mean_rating_difference"]
    assert s["mean"] == pytest.approx(diffs.mean())
    half = 1.959963984540054 * diffs.std(ddof=1) / math.sqrt(len(diffs))
    assert (s["ci_low"], s["ci_high"]) == pytest.approx((diffs.mean() - half, diffs.mean() + half))


def test_majority_agreement(judgments):
    assert majority_agreement(judgments[judgments.trial == "formal"]) == pytest.approx(7 / 9)
    tie = pd.DataFrame({"pair_id": ["p", "p"], "choice": ["natural", "perturbed"]})
    assert majority_agreement(tie) == 0.0


def test_artifact_ratings_and_per_type(judgments):
    s = human_evaluation_summary(judgments)
    assert s["artifact"]["natural_mean"] == pytest.approx(1.5)
    assert s["artifact"]["perturbed_mean"] == pytest.approx(2.0)
    assert s["artifact"]["difference"]["mean"] == pytest.approx(0.5)
    assert s["per_type"]["late"]["natural_preference"]["rate"] == pytest.approx(5 / 6)
    assert s["per_type"]["early"]["natural_preference"]["rate"] == pytest.approx(1 / 3)
    assert s["krippendorff_level"] == "ordinal"


def test_per_annotator_and_exclusion(judgments):
    table = per_annotator(judgments).set_index("annotator")
    assert table.loc["a", "agreement_with_majority"] == 1.0
    assert table.loc["c", "agreement_with_majority"] == pytest.approx(1 / 3)
    assert table.loc["c", "attention_failures"] == 1 and table.loc["a", "attention_failures"] == 0
    assert table.loc["c", "median_trial_s"] == pytest.approx(20.0)
    # Excluding the careless annotator changes the preference rate to 4/6.
    s = human_evaluation_summary(judgments, exclude_annotators=["c"])
    assert s["natural_preference"]["rate"] == pytest.approx(4 / 6)
    assert s["excluded_annotators"] == ["c"]

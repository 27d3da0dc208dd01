"""Human-evaluation statistics against values worked out by hand."""

import math

import numpy as np
import pandas as pd
import pytest

from analysis.agreement import (
    choice_alpha, human_evaluation_summary, krippendorff_alpha, others_majority, others_majority_agreement, per_annotator,
    rating_difference_alpha,
)
from analysis.annotator_simulation import SimulatedStudy, exclusion_rates, simulate_judgments
from analysis.study_metrics import suggested_exclusions

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


def test_agreement_leaves_the_own_vote_out_and_reports_ties(judgments):
    formal = judgments[judgments.trial == "formal"]
    # p1: a, b natural, c perturbed; p2: all natural; p3: a, b perturbed, c natural.
    assert others_majority(formal).tolist() == ["tie", "tie", "natural", "natural", "natural", "natural",
                                                "tie", "tie", "perturbed"]
    assert others_majority_agreement(formal) == {"agreement": pytest.approx(3 / 5), "compared": 5, "ties": 4,
                                                 "judged_alone": 0}
    alone = pd.DataFrame({"pair_id": ["p", "q", "q"], "choice": ["natural", "natural", "perturbed"]})
    assert others_majority_agreement(alone) == {"agreement": 0.0, "compared": 2, "ties": 0, "judged_alone": 1}


def test_alpha_of_the_forced_choice_and_of_the_rating_difference_by_hand(judgments):
    formal = judgments[judgments.trial == "formal"]
    # Choices (1 = natural) p1 (1, 1, 0), p2 (1, 1, 1), p3 (0, 0, 1): coincidences o11 = 4, o00 = 1,
    # o01 = o10 = 2 (n = 9); D_o = 4/9, D_e = 2 * 6 * 3 / (9 * 8) = 1/2.
    assert choice_alpha(formal) == pytest.approx(1 - (4 / 9) / (1 / 2))
    # Differences p1 (2, 2, -1), p2 (1, 2, 1), p3 (0, -2, 2): D_o = (18 + 2 + 24) / 9,
    # D_e = 2 * 9 * 158/9 / (9 * 8) (sum of squares about the mean 7/9 is 158/9).
    assert rating_difference_alpha(formal) == pytest.approx(1 - (44 / 9) / (316 / 72))
    summary = human_evaluation_summary(judgments)
    assert summary["alpha_forced_choice"] == pytest.approx(1 / 9)
    assert summary["alpha_pooled_ratings_natural_and_perturbed"] == pytest.approx(
        krippendorff_alpha(pd.concat([formal.assign(clip=formal.pair_id + ":n", rating=formal.rating_natural),
                                      formal.assign(clip=formal.pair_id + ":p", rating=formal.rating_perturbed)]),
                           "annotator", "clip", "rating", "ordinal"))


def test_artifact_ratings_and_per_type(judgments):
    s = human_evaluation_summary(judgments)
    assert s["artifact"]["natural_mean"] == pytest.approx(1.5)
    assert s["artifact"]["perturbed_mean"] == pytest.approx(2.0)
    assert s["artifact"]["difference"]["mean"] == pytest.approx(0.5)
    assert s["per_type"]["late"]["natural_preference"]["rate"] == pytest.approx(5 / 6)
    assert s["per_type"]["early"]["natural_preference"]["rate"] == pytest.approx(1 / 3)


def test_per_annotator_and_exclusion(judgments):
    table = per_annotator(judgments).set_index("annotator")
    # a: p1 and p3 met a tie of the others, p2 agrees; c disagrees with both others on p1 and p3.
    assert table.loc["a", ["agreement_with_others_majority", "compared_with_others", "others_tied"]].tolist() == [
        1.0, 1, 2]
    assert table.loc["c", "agreement_with_others_majority"] == pytest.approx(1 / 3)
    assert table.loc["c", "compared_with_others"] == 3 and table.loc["c", "others_tied"] == 0
    assert table["ratings_contradict_choice"].tolist() == [0.0, 0.0, 0.0]
    assert table.loc["c", "attention_failures"] == 1 and table.loc["a", "attention_failures"] == 0
    assert table.loc["c", "median_trial_s"] == pytest.approx(20.0)
    # Excluding the careless annotator changes the preference rate to 4/6.
    s = human_evaluation_summary(judgments, exclude_annotators=["c"])
    assert s["natural_preference"]["rate"] == pytest.approx(4 / 6)
    assert s["excluded_annotators"] == ["c"]


def test_ratings_below_the_other_clip_contradict_the_choice():
    rows = [judgment("a", f"p{i}", "late", "natural", rn, rp) for i, (rn, rp) in enumerate([(2, 4), (3, 3), (5, 1), (1, 2)])]
    table = per_annotator(pd.DataFrame(rows)).set_index("annotator")
    assert table.loc["a", "ratings_contradict_choice"] == pytest.approx(2 / 4)


def test_a_coin_flipper_agrees_with_the_others_at_chance():
    # With the own vote counted, a coin-flipper's agreement at K = 3 was about 2/3.
    agreements = []
    for seed in range(10):
        judgments, coin_flippers = simulate_judgments(seed)
        table = per_annotator(judgments)
        agreements += table[table.annotator.isin(coin_flippers)]["agreement_with_others_majority"].tolist()
    assert np.mean(agreements) == pytest.approx(0.5, abs=0.05)


def test_the_exclusion_rule_flags_coin_flippers_and_spares_careful_annotators():
    study = SimulatedStudy()
    assert (study.careful, study.coin_flippers, study.judgments_per_pair, study.trials, study.careful_accuracy) == (
        20, 5, 3, 20, 0.85)
    judgments, _ = simulate_judgments(0, study)
    assert judgments.groupby("annotator").size().eq(20).all()
    assert judgments.groupby("pair_id").size().max() == 3
    rates = exclusion_rates(seeds=50)
    assert rates["coin_flippers_flagged"] >= 0.8
    assert rates["careful_flagged"] <= 0.05


def test_too_few_judgments_are_not_grounds_for_exclusion(judgments):
    table = per_annotator(judgments)
    assert suggested_exclusions(table) == ["c"]  # the attention failure
    assert suggested_exclusions(table.assign(attention_failures=0)) == []  # c's 1/3 is over 3 judgments
    assert suggested_exclusions(table.assign(attention_failures=0), min_judgments=3) == ["c"]

"""Questionnaire statistics against scipy and against hand-worked numbers, and Bradley-Terry on
rankings simulated from known strengths."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from analysis.questionnaire_stats import (
    MIN_PARTICIPANTS,
    Rating,
    bradley_terry,
    holm,
    item_summaries,
    order_effect_test,
    order_effects,
    within_participant_test,
)


def ratings_from_table(table: list[list[float]], systems: list[str], item: str = "q") -> list[Rating]:
    """One participant per row, one call per system in the given order."""
    return [Rating(f"p{row}", len(systems) * row + k, system, k + 1, item, float(value))
            for row, values in enumerate(table) for k, (system, value) in enumerate(zip(systems, values))]


def test_two_systems_use_scipys_wilcoxon_and_the_rank_biserial_worked_by_hand():
    a = [5, 3, 4, 6, 2, 7]
    b = [2, 4, 2, 2, 4, 2]  # differences 3, -1, 2, 4, -2, 5
    test = within_participant_test(ratings_from_table([[x, y] for x, y in zip(a, b)], ["A", "B"]), "q")
    expected = stats.wilcoxon(a, b)
    assert (test.test, test.compared, test.n_participants) == ("wilcoxon", ("A", "B"), 6)
    assert test.statistic == pytest.approx(expected.statistic) and test.p_value == pytest.approx(expected.pvalue)
    # |d| ranks 4, 1, 2.5, 5, 2.5, 6: positive 17.5, negative 3.5 -> (17.5 - 3.5) / 21
    assert test.statistic == pytest.approx(3.5)
    assert test.effect_size == pytest.approx(14 / 21)
    assert test.pairs[0].median_difference == pytest.approx(2.5)


def test_three_systems_use_friedman_with_kendalls_w_and_holm_adjusted_posthoc_pairs():
    table = [[5, 3, 1], [4, 4, 2], [5, 2, 3], [3, 2, 1], [4, 3, 2], [5, 4, 4], [2, 3, 1], [4, 1, 2]]
    test = within_participant_test(ratings_from_table(table, ["A", "B", "C"]), "q")
    chi2, p = stats.friedmanchisquare(*np.array(table).T)
    assert (test.test, test.n_participants, test.effect_size_name) == ("friedman", 8, "Kendall's W")
    assert test.statistic == pytest.approx(chi2) and test.p_value == pytest.approx(p)
    assert test.effect_size == pytest.approx(chi2 / (8 * 2))
    columns = np.array(table).T
    raw = [stats.wilcoxon(columns[i], columns[j]).pvalue for i, j in ((0, 1), (0, 2), (1, 2))]
    assert [(c.first, c.second) for c in test.pairs] == [("A", "B"), ("A", "C"), ("B", "C")]
    assert [c.p_value for c in test.pairs] == pytest.approx(raw)
    assert [c.p_holm for c in test.pairs] == pytest.approx(holm(raw))


def test_friedman_statistic_matches_the_textbook_formula_without_ties():
    table = [[1, 2, 3], [1, 3, 2], [2, 1, 3], [1, 2, 3], [1, 2, 3]]  # ranks within each row, no ties
    n, k = len(table), 3
    rank_sums = np.array(table).sum(axis=0)
    textbook = 12 / (n * k * (k + 1)) * (rank_sums ** 2).sum() - 3 * n * (k + 1)
    test = within_participant_test(ratings_from_table(table, ["A", "B", "C"]), "q")
    assert test.statistic == pytest.approx(textbook)  # 5.2


def test_holm_on_a_worked_example():
    # m = 5: 0.001*5, 0.01*4, 0.02*3, then max(0.06, 0.03*2), max(0.06, 0.04*1)
    assert holm([0.04, 0.001, 0.03, 0.01, 0.02]) == pytest.approx([0.06, 0.005, 0.06, 0.04, 0.06])
    assert holm([0.5, 0.9]) == [1.0, 1.0]
    assert holm([]) == []


def test_too_few_complete_participants_gives_no_test_and_says_why():
    table = [[4, 2]] * (MIN_PARTICIPANTS - 1)
    ratings = ratings_from_table(table, ["A", "B"]) + [Rating("late", 99, "A", 1, "q", 3.0)]  # rated only A
    test = within_participant_test(ratings, "q")
    assert test.test is None and test.n_participants == MIN_PARTICIPANTS - 1
    assert test.reason == (f"only {MIN_PARTICIPANTS - 1} participant(s) answered at every compared system; "
                           f"at least {MIN_PARTICIPANTS} are needed")


def test_identical_answers_give_no_test():
    test = within_participant_test(ratings_from_table([[3, 3]] * 6, ["A", "B"]), "q")
    assert test.test is None and test.reason == "every participant gave every system the same answer"


def test_item_summaries_count_answers_and_average_a_participants_repeated_calls():
    ratings = ratings_from_table([[4, 2], [5, 2], [4, 1], [3, 2], [5, 3]], ["A", "B"])
    ratings.append(Rating("p0", 50, "A", 3, "q", 2.0))  # p0 met A twice: counted once, as (4 + 2) / 2
    a, b = item_summaries(ratings, "q")
    assert (a.system, a.n_participants, a.median, a.counts) == ("A", 5, 4.0, {2: 1, 3: 1, 4: 2, 5: 2})
    assert (b.system, b.median, b.counts) == ("B", 2.0, {1: 1, 2: 3, 3: 1})
    assert a.median_low <= a.median <= a.median_high and b.median_low <= b.median <= b.median_high
    assert item_summaries(ratings, "q") == item_summaries(ratings, "q")  # seeded
    assert item_summaries(ratings, "other") == []


def test_order_effects_find_a_second_call_rated_higher():
    rng = np.random.default_rng(3)
    ratings = []
    for p in range(16):
        for position, system in enumerate(["A", "B"] if p % 2 else ["B", "A"], 1):  # counterbalanced
            value = float(np.clip(round(2.5 + 1.2 * (position == 2) + rng.normal(0, 0.5)), 1, 5))
            ratings.append(Rating(f"p{p}", 2 * p + position, system, position, "q", value))
    first, second = order_effects(ratings, "q")
    assert (first.position, first.n_participants, second.position) == (1, 16, 2)
    assert second.median > first.median and first.median_low <= first.median <= first.median_high
    test = order_effect_test(ratings, "q")
    assert (test.test, test.compared, test.n_participants) == ("wilcoxon", ("call 1", "call 2"), 16)
    assert test.p_value < 0.05 and test.effect_size < 0  # call 1 rated lower than call 2
    assert within_participant_test(ratings, "q").p_value > 0.05  # the systems themselves do not differ


def test_order_effect_test_compares_only_positions_enough_participants_reached():
    table = [[4, 3, 2]] * 3 + [[5, 3, 1]] * 3
    ratings = [r for r in ratings_from_table(table, ["A", "B", "C"]) if r.position < 3 or r.participant == "p0"]
    assert order_effect_test(ratings, "q").compared == ("call 1", "call 2")


def plackett_luce_rankings(strengths: dict[str, float], n: int, rng) -> list[tuple[str, ...]]:
    """Rankings drawn by choosing, position by position, among the rest with probability ~ exp(strength)."""
    rankings = []
    for _ in range(n):
        left, ranking = list(strengths), []
        while left:
            weights = np.exp([strengths[s] for s in left])
            ranking.append(left.pop(rng.choice(len(left), p=weights / weights.sum())))
        rankings.append(tuple(ranking))
    return rankings


def test_bradley_terry_recovers_the_order_of_three_simulated_systems():
    truth = {"fast": 1.0, "medium": 0.0, "slow": -1.0}
    rankings = plackett_luce_rankings(truth, 40, np.random.default_rng(7))
    strengths = bradley_terry(rankings, ["slow", "fast", "medium"], seed=1)
    assert [s.system for s in strengths] == ["fast", "medium", "slow"]
    assert all(s.low <= s.strength <= s.high and s.n_rankings == 40 for s in strengths)
    assert [s.low for s in strengths] == sorted([s.low for s in strengths], reverse=True)
    assert [s.high for s in strengths] == sorted([s.high for s in strengths], reverse=True)
    assert strengths[0].low > strengths[-1].high  # the best and the worst are told apart
    assert sum(s.strength for s in strengths) == pytest.approx(0, abs=1e-9)
    fast, medium, _ = strengths
    assert fast.p_over_next == pytest.approx(1 / (1 + np.exp(medium.strength - fast.strength)))
    assert 0.5 < fast.p_over_next < 0.9 and strengths[-1].p_over_next is None


def test_a_pick_counts_as_preferred_over_every_other_system():
    strengths = bradley_terry([("B",)] * 6 + [("A",)] * 2 + [("C", "A")], ["A", "B", "C"], n_resamples=50)
    assert strengths[0].system == "B" and strengths[0].n_rankings == 8  # not ("C", "A")
    with pytest.raises(ValueError, match="unknown system"):
        bradley_terry([("A", "Z")], ["A", "B"])
    with pytest.raises(ValueError, match="no ranking compares two systems"):
        bradley_terry([("A", "B")][:0], ["A", "B"])

"""Which automatic measure tracks the ratings, on simulated studies: one where the felt waiting
follows the measured latency, and a hundred where the ratings have nothing to do with any measure."""

from __future__ import annotations

import time

import numpy as np
import pytest
from scipy import stats

from analysis.measure_tracking import _weighted_ranks, measure_rating_correlations
from analysis.questionnaire_stats import Rating

UNRELATED = ("fto_iqr_s", "interruptions_per_min", "backchannels_per_min")


def simulated_study(rng, ratings_follow_latency: bool, n_participants: int = 30):
    """Each participant talks to a fast and a slow system in random order. Every participant has
    their own offsets in all measures and their own leniency in all ratings, so sessions of one
    participant are alike on both sides, related or not."""
    measures, ratings = {}, []
    for p in range(n_participants):
        latency_offset, leniency = rng.normal(0, 0.2), rng.normal(0, 0.7)
        offsets = rng.normal(0, 1, len(UNRELATED))
        for position, system in enumerate(rng.permutation(["fast", "slow"]), 1):
            session = 2 * p + position
            latency = (0.6 if system == "fast" else 1.4) + latency_offset + rng.normal(0, 0.3)
            measures[session] = {"response_latency_s": latency} | {
                name: float(offset + rng.normal()) for name, offset in zip(UNRELATED, offsets)}
            if ratings_follow_latency:
                waited = 1 + 2.0 * latency + 0.3 * leniency + rng.normal(0, 0.8)
                right_time = 5.5 - 1.5 * latency + rng.normal(0, 0.8)
            else:
                waited, right_time = (3 + leniency + rng.normal(0, 1.2) for _ in range(2))
            answers = {"made_me_wait": waited, "right_time": right_time,
                       "overall_natural": 3 + leniency + rng.normal(0, 1.2)}
            ratings += [Rating(f"p{p}", session, system, position, item, float(np.clip(np.round(value), 1, 5)))
                        for item, value in answers.items()]
    return measures, ratings


def test_latency_is_found_to_track_the_felt_waiting_with_the_right_sign():
    measures, ratings = simulated_study(np.random.default_rng(11), ratings_follow_latency=True)
    result = measure_rating_correlations(measures, ratings)
    first, second = result.rows[:2]
    assert (first.measure, first.item, first.reverse_keyed) == ("response_latency_s", "made_me_wait", True)
    assert first.rho > 0.5 and first.corrected_low > 0 and first.low > 0 and first.distinguishable
    assert first.corrected_low <= first.low <= first.rho <= first.high <= first.corrected_high
    assert first.reading == "higher response_latency_s, worse on made_me_wait"
    # "answered at the right time" is not reverse-keyed: latency lowers it, which also reads as worse.
    assert (second.measure, second.item, second.reverse_keyed) == ("response_latency_s", "right_time", False)
    assert second.rho < 0 and second.corrected_high < 0 and second.distinguishable
    assert second.reading == "higher response_latency_s, worse on right_time"
    assert not any(row.distinguishable for row in result.rows[2:])
    assert len(result.rows) == 4 * 3 and (result.n_sessions, result.n_participants) == (60, 30)
    assert result.verdict.startswith("60 sessions from 30 participants: response_latency_s tracks 'made_me_wait' (rho ")
    assert result.verdict.endswith("corrected; higher response_latency_s, worse on made_me_wait); "
                                   "1 more pair(s) distinguishable.")


def test_unrelated_ratings_are_declared_untracked_and_single_intervals_cover_zero():
    rng = np.random.default_rng(2024)
    started = time.perf_counter()
    any_distinguishable, covered, verdicts = 0, [], set()
    for study in range(100):
        result = measure_rating_correlations(*simulated_study(rng, ratings_follow_latency=False), seed=study)
        any_distinguishable += any(row.distinguishable for row in result.rows)
        covered.append([row.low <= 0 <= row.high for row in sorted(result.rows, key=lambda r: (r.measure, r.item))])
        verdicts.add(result.verdict)
    coverage_per_pair = np.mean(covered, axis=0)
    # The family-wise rate is 5 % (at most 10 of 100 fail about 1 % of the time), each single
    # interval's coverage 95 % (1200 intervals, 12 to a study: the band below is several standard errors wide).
    assert any_distinguishable <= 10
    assert 0.90 <= np.mean(covered) <= 0.985, np.mean(covered)
    assert 0.85 <= coverage_per_pair.min() and coverage_per_pair.max() <= 1.0
    assert "60 sessions from 30 participants: no measure is distinguishable from none." in verdicts
    print(f"{any_distinguishable} of 100 null studies with a distinguishable pair; single-interval coverage "
          f"{np.mean(covered):.3f}; {time.perf_counter() - started:.1f} s")


def test_point_estimate_is_scipys_spearman_over_the_sessions_with_both_values():
    measures, ratings = simulated_study(np.random.default_rng(5), ratings_follow_latency=True, n_participants=8)
    measures[3]["fto_iqr_s"] = None  # a measure missing in one session leaves that pair one session short
    result = measure_rating_correlations(measures, ratings, items=["made_me_wait"], n_boot=200)
    assert {row.item for row in result.rows} == {"made_me_wait"}
    by_measure = {row.measure: row for row in result.rows}
    for name, row in by_measure.items():
        sessions = [s for s in sorted(measures) if measures[s][name] is not None]
        waited = {r.session_id: r.value for r in ratings if r.item == "made_me_wait"}
        expected = stats.spearmanr([measures[s][name] for s in sessions], [waited[s] for s in sessions]).statistic
        assert row.rho == pytest.approx(expected)
        assert (row.n_sessions, row.n_participants) == (len(sessions), 8)
    assert by_measure["fto_iqr_s"].n_sessions == 15


def test_a_resample_weighting_ranks_like_the_duplicated_sessions():
    values = np.array([3.0, 1.0, 3.0, 2.0, 5.0, 2.0])
    weights = np.array([[2, 0, 1, 3, 1, 1], [1, 1, 1, 1, 1, 1]], dtype=float)
    ranked = _weighted_ranks(values, weights)
    for row, w in zip(ranked, weights):
        duplicated = stats.rankdata(np.repeat(values, w.astype(int)))
        assert list(row[w > 0]) == list(duplicated[np.cumsum(w.astype(int))[w > 0] - 1])


def test_few_participants_or_no_data_give_a_plain_verdict():
    measures, ratings = simulated_study(np.random.default_rng(1), ratings_follow_latency=True, n_participants=3)
    result = measure_rating_correlations(measures, ratings, n_boot=100)
    assert result.verdict == ("6 sessions from 3 participants: too few participants to tell which measure "
                              "tracks the ratings (at least 5 are needed).")
    assert all(row.low is None and row.p_corrected is None and not row.distinguishable for row in result.rows)
    empty = measure_rating_correlations({}, ratings)
    assert (empty.rows, empty.verdict) == ((), "No session has both automatic measures and ratings yet.")


def test_a_hundred_session_study_with_twelve_measures_and_seven_items_takes_well_under_two_seconds():
    rng = np.random.default_rng(0)
    items = ["right_time", "interrupted_me", "made_me_wait", "let_me_finish", "backchannels_natural",
             "overall_natural", "engaging"]
    measures = {s: {f"measure_{k}": float(rng.normal()) for k in range(12)} for s in range(100)}
    ratings = [Rating(f"p{s // 3}", s, "AB"[s % 2], s % 3 + 1, item, float(rng.integers(1, 6)))
               for s in range(100) for item in items]
    started = time.process_time()  # CPU time: the other work on a shared machine does not count
    result = measure_rating_correlations(measures, ratings, n_boot=2000)
    assert len(result.rows) == 84 and time.process_time() - started < 1.5


def test_degenerate_studies_give_no_numerical_warnings():
    # Each background pass of a small study (the demo's) printed numpy's RuntimeWarnings: ranks that
    # do not vary, bootstrap draws without a valid participant, a spread of fewer than two values.
    import warnings

    from analysis.questionnaire_stats import Rating

    cases = [
        ({s: {"lat": float(s), "other": None} for s in range(4)},
         [Rating(f"p{s // 2}", s, "A", 1, "made_me_wait", float(s % 3 + 1)) for s in range(4)]),
        ({s: {"lat": 1.0} for s in range(8)}, [Rating(f"p{s // 2}", s, "A", 1, "made_me_wait", 3.0) for s in range(8)]),
        ({s: {"lat": float(s), "tor": float(s % 2)} for s in range(6)},
         [Rating(f"p{s}", s, "A", 1, item, float((s * 7 + k) % 5 + 1)) for s in range(6)
          for k, item in enumerate(["made_me_wait", "right_time"])]),
        ({s: {"lat": float(s)} for s in range(3)}, [Rating(f"p{s}", s, "A", 1, "right_time", float(s + 1)) for s in range(3)]),
    ]
    for measures, ratings in cases:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            result = measure_rating_correlations(measures, ratings, n_boot=200)
        assert all(np.isfinite(row.rho) for row in result.rows)

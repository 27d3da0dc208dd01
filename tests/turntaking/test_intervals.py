import math

import pytest

from turntaking.intervals import (
    c_index,
    concordance_counts,
    margin_of_error,
    mean_confidence_interval,
    wilson_interval,
    z_value,
)


def test_z_value_95():
    assert z_value(0.95) == pytest.approx(1.959964, abs=1e-6)


def test_wilson_interval_hand_computed():
    # 8 of 10, z = 1.959964: centre = (0.8 + 0.192079) / 1.384146 = 0.716741,
    # half = 1.959964 * sqrt(0.016 + 0.009604) / 1.384146 = 0.226563
    low, high = wilson_interval(8, 10)
    assert low == pytest.approx(0.490162, abs=1e-5)
    assert high == pytest.approx(0.943318, abs=1e-5)


def test_wilson_interval_edges():
    low, high = wilson_interval(0, 5)
    assert low == 0.0
    # z^2 / (n + z^2) = 3.841459 / 8.841459
    assert high == pytest.approx(0.434482, abs=1e-5)
    assert wilson_interval(5, 5)[1] == 1.0
    assert all(math.isnan(v) for v in wilson_interval(0, 0))
    with pytest.raises(ValueError, match="successes"):
        wilson_interval(6, 5)


def test_mean_confidence_interval_hand_computed():
    # mean 2.5, sample sd sqrt(5/3) = 1.290994, half = 1.959964 * 1.290994 / 2 = 1.265151
    mean, low, high = mean_confidence_interval([1, 2, 3, 4])
    assert mean == 2.5
    assert low == pytest.approx(1.234849, abs=1e-5)
    assert high == pytest.approx(3.765151, abs=1e-5)
    mean, low, high = mean_confidence_interval([0.7])
    assert mean == 0.7 and math.isnan(low) and math.isnan(high)


def test_margin_of_error_matches_interval_half_width():
    assert margin_of_error([1, 2, 3, 4]) == pytest.approx(1.265151, abs=1e-5)


def test_c_index_with_ties_excluded():
    # pairs (p, n): (3,1) c, (3,2) c, (3,3) tie, (2,1) c, (2,2) tie, (2,3) d, (1,1) tie, (1,2) d, (1,3) d
    assert concordance_counts([3, 2, 1], [1, 2, 3]) == (3, 3, 3)
    assert c_index([3, 2, 1], [1, 2, 3]) == 0.5
    assert c_index([5, 4], [1, 4]) == pytest.approx(3 / 3)
    assert c_index([1.0, 0.5], [0.0, 2.0]) == pytest.approx(2 / 4)
    assert math.isnan(c_index([1, 1], [1]))


def test_expanded_confidence_widens_with_few_clusters():
    from turntaking.intervals import expanded_confidence

    # 2 * Phi(sqrt(7/6) * t_6(0.975)) - 1, t_6(0.975) = 2.446912
    assert expanded_confidence(0.95, 7) == pytest.approx(0.99178, abs=1e-4)
    assert 0.95 < expanded_confidence(0.95, 200) < expanded_confidence(0.95, 20) < expanded_confidence(0.95, 7) < 1


def test_ratio_of_sums_interval_resamples_whole_clusters():
    from turntaking.intervals import ratio_of_sums_interval

    # Two clusters: a resample is cluster 1 twice (2/10), cluster 2 twice (9/10) or one of each
    # (11/20); with one degree of freedom the interval takes the extremes.
    assert ratio_of_sums_interval([2, 9], [10, 10]) == (pytest.approx(0.2), pytest.approx(0.9))
    # Clusters without units are left out; one left: no interval rather than a made-up one.
    assert ratio_of_sums_interval([2, 0], [10, 0]) is None
    assert ratio_of_sums_interval([], []) is None
    # Every cluster at 100 %: the interval cannot leave [0, 1].
    low, high = ratio_of_sums_interval([5, 7, 3, 8], [5, 7, 4, 8])
    assert 0.75 <= low <= 22 / 23 <= high <= 1.0


def test_proportion_interval_stays_in_range_and_claims_no_certainty():
    from turntaking.intervals import mean_confidence_interval, proportion_interval

    rates = [0.0, 0.0, 0.0, 0.5, 0.0, 0.0]  # per-session rates near their floor
    _, normal_low, _ = mean_confidence_interval(rates)
    assert normal_low < 0  # the old interval of their mean went below 0
    low, high = proportion_interval(rates, [1.0] * 6)
    assert 0.0 <= low <= sum(rates) / 6 <= high <= 0.5
    # Every cluster at 100 %: no resample differs, so not [1, 1] but Wilson's 4 of 4 clusters.
    low, high = proportion_interval([3, 5, 2, 7], [3, 5, 2, 7])
    assert (low, high) == (pytest.approx(0.510109, abs=1e-5), 1.0)
    assert proportion_interval([0, 0], [4, 9]) == (0.0, pytest.approx(0.657620, abs=1e-5))
    assert proportion_interval([3], [3]) is None

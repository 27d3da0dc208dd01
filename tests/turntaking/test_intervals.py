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

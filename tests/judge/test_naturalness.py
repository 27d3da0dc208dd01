import math

import numpy as np
import pytest

from judge.naturalness import (
    NaturalnessParams,
    NoUnitsError,
    frame_nll,
    pool_units,
    unit_frame_range,
    unit_scores,
)


def test_frame_nll_picks_observed_class_and_skips_unknown():
    log_probs = np.log(np.full((4, 256), 1 / 512))
    log_probs[:, 7] = np.log(0.5)
    nll = frame_nll(log_probs, np.array([7, 0, -1, 7]))
    assert nll[0] == pytest.approx(math.log(2))
    assert nll[1] == pytest.approx(math.log(512))
    assert math.isnan(nll[2])
    assert nll[3] == pytest.approx(math.log(2))


def test_unit_frame_range_includes_both_ends():
    # frame times 1.00, 1.02, ... 3.00 s lie in [1, 3]: frames 50..150
    assert unit_frame_range(1.0, 3.0, 50) == (50, 151)
    assert unit_frame_range(-1.0, 0.05, 50) == (0, 3)  # 0.00, 0.02, 0.04


def test_unit_scores_exclusions():
    fr = 50
    nll = np.arange(500, dtype=float)  # 10 s of frames; frame t has NLL t
    nll[300:310] = np.nan  # horizon unknown
    units = [
        (1.0, 3.0, "onset"),  # entirely in the first 3 s: dropped
        (2.0, 4.0, "offset"),  # frames 150..200 remain (time >= 3 s)
        (3.0, 3.06, "onset"),  # frames 150..153: 4 frames < 5, dropped
        (5.9, 6.28, "offset"),  # frames 295..314 minus nan 300..309 -> 295..299, 310..314
        (9.0, 11.0, "onset"),  # frames 450..499 (beyond the end clipped)
    ]
    scores = unit_scores(nll, units, fr, NaturalnessParams())
    assert scores == [pytest.approx(175.0), pytest.approx((sum(range(295, 300)) + sum(range(310, 315))) / 10),
                      pytest.approx(474.5)]


def test_pool_units_mean_tail_dialog():
    scores = [1.0, 2.0, 3.0, 4.0, 10.0]
    res = pool_units(scores)
    # ceil(0.25 * 5) = 2 worst units: 10 and 4
    assert res.mean_nll == pytest.approx(4.0)
    assert res.tail_nll == pytest.approx(7.0)
    assert res.dialog_nll == pytest.approx(5.5)
    assert res.naturalness == pytest.approx(-5.5)
    assert res.n_units == 5
    one = pool_units([2.5])
    assert (one.mean_nll, one.tail_nll, one.dialog_nll) == (2.5, 2.5, 2.5)
    weighted = pool_units(scores, NaturalnessParams(mean_weight=1.0, tail_fraction=0.5))
    assert weighted.dialog_nll == pytest.approx(4.0) and weighted.tail_nll == pytest.approx(17 / 3)


def test_pool_units_without_units_is_an_error():
    with pytest.raises(NoUnitsError, match="no turn-taking boundary unit"):
        pool_units([])

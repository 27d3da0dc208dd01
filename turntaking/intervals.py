"""Confidence intervals and rank statistics shared by the judges and the researcher dashboards.

- `wilson_interval`: score interval of a binomial proportion (well behaved at 0 %, 100 % and small n).
- `mean_confidence_interval`: normal-approximation interval of a mean, mean +- z * sd / sqrt(n),
  with the sample standard deviation (ddof=1) as in Talking Turns' per-session intervals.
- `c_index`: concordance of two score samples, P(positive > negative), ties excluded.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np


def z_value(confidence: float = 0.95) -> float:
    """Two-sided standard-normal quantile: 1.959964 for 95 %."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence}")
    return NormalDist().inv_cdf(0.5 + confidence / 2.0)


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """(low, high) Wilson score interval of successes / n; (nan, nan) when n == 0."""
    if n < 0 or successes < 0 or successes > n:
        raise ValueError(f"need 0 <= successes <= n, got successes={successes}, n={n}")
    if n == 0:
        return (math.nan, math.nan)
    z = z_value(confidence)
    p = successes / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    # At 0 % and 100 % the bound is exactly 0 or 1; rounding would leave a hair off.
    low = 0.0 if successes == 0 else centre - half
    high = 1.0 if successes == n else centre + half
    return (low, high)


def mean_confidence_interval(values, confidence: float = 0.95) -> tuple[float, float, float]:
    """(mean, low, high) with a normal interval; low/high are nan with fewer than two values."""
    x = np.asarray(list(values), dtype=float)
    if x.size == 0:
        return (math.nan, math.nan, math.nan)
    mean = float(x.mean())
    if x.size < 2:
        return (mean, math.nan, math.nan)
    half = z_value(confidence) * float(x.std(ddof=1)) / math.sqrt(x.size)
    return (mean, mean - half, mean + half)


def margin_of_error(values, confidence: float = 0.95) -> float:
    """z * sd / sqrt(n) of `values` (Talking Turns A.8, eq. 10: sd over a threshold sweep)."""
    x = np.asarray(list(values), dtype=float)
    if x.size < 2:
        return math.nan
    return z_value(confidence) * float(x.std(ddof=1)) / math.sqrt(x.size)


def concordance_counts(positive_scores, negative_scores) -> tuple[int, int, int]:
    """(concordant, discordant, tied) over all positive x negative score pairs."""
    pos = np.asarray(list(positive_scores), dtype=float)
    neg = np.sort(np.asarray(list(negative_scores), dtype=float))
    # For each positive score: negatives strictly below it are concordant, equal ones tied.
    below = np.searchsorted(neg, pos, side="left")
    below_or_equal = np.searchsorted(neg, pos, side="right")
    concordant = int(below.sum())
    tied = int((below_or_equal - below).sum())
    discordant = pos.size * neg.size - concordant - tied
    return concordant, discordant, tied


def c_index(positive_scores, negative_scores) -> float:
    """Share of untied (positive, negative) pairs where the positive scores higher; nan if none."""
    concordant, discordant, _ = concordance_counts(positive_scores, negative_scores)
    if concordant + discordant == 0:
        return math.nan
    return concordant / (concordant + discordant)

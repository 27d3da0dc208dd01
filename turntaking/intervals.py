"""Confidence intervals and rank statistics shared by the judges and the researcher dashboards.

- `wilson_interval`: score interval of a binomial proportion (well behaved at 0 %, 100 % and small n).
- `mean_confidence_interval`: normal-approximation interval of a mean, mean +- z * sd / sqrt(n),
  with the sample standard deviation (ddof=1) as in Talking Turns' per-session intervals.
- `c_index`: concordance of two score samples, P(positive > negative), ties excluded.
- `cluster_bootstrap_interval`: percentile bootstrap interval (scipy.stats.bootstrap) of a pooled
  statistic when whole clusters (sessions, conversations) are resampled, for data whose units
  within a cluster are dependent (40 ms chunks of one session, pairs cut from one conversation);
  `ratio_of_sums_interval` and `proportion_interval` are its common cases. A percentile interval
  lies within the range of the resampled statistic, so a rate's interval stays inside [0, 1].
  It is Hesterberg's "expanded" percentile interval (Hesterberg 2015, What teachers should know
  about the bootstrap, Am. Stat. 69(4)): the percentiles are taken at the level whose normal
  quantile is sqrt(k / (k - 1)) * t_(k-1), which corrects the plain percentile interval's
  narrowness with few clusters (coverage measured on simulated studies, as
  tests/judge/test_metric_intervals.py does: 92-94 % with 5-40 sessions, where the plain
  percentile interval covered 83-93 %; benchmarks/interval_coverage.py at commit 59e594b).
"""

from __future__ import annotations

import math
import warnings
from statistics import NormalDist

import numpy as np

# scipy.stats is imported where it is used: it takes about half a second, which most commands never need.


def z_value(confidence: float = 0.95) -> float:
    """Two-sided standard-normal quantile: z = Phi^-1(0.5 + confidence / 2), 1.959964 for 95 %.

    >>> round(z_value(0.95), 6), round(z_value(0.90), 4)
    (1.959964, 1.6449)
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence}")
    return NormalDist().inv_cdf(0.5 + confidence / 2.0)


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """(low, high) Wilson score interval of successes / n; (nan, nan) when n == 0.

    With p = successes / n: (p + z^2/2n +- z sqrt(p(1-p)/n + z^2/4n^2)) / (1 + z^2/n).

    >>> [round(x, 3) for x in wilson_interval(5, 10)]  # symmetric about 0.5
    [0.237, 0.763]
    >>> round(wilson_interval(0, 10)[1], 3)  # 0 of 10 still leaves room above 0
    0.278
    >>> wilson_interval(0, 0)
    (nan, nan)
    """
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
    """(mean, low, high) with a normal interval; low/high are nan with fewer than two values.

    mean +- z * sd / sqrt(n), sd with ddof=1: for [1, 2, 3], sd = 1 and the half-width is
    1.96 / sqrt(3) = 1.13.

    >>> [round(x, 2) for x in mean_confidence_interval([1, 2, 3])]
    [2.0, 0.87, 3.13]
    >>> mean_confidence_interval([4])
    (4.0, nan, nan)
    """
    x = np.asarray(list(values), dtype=float)
    if x.size == 0:
        return (math.nan, math.nan, math.nan)
    mean = float(x.mean())
    if x.size < 2:
        return (mean, math.nan, math.nan)
    half = z_value(confidence) * float(x.std(ddof=1)) / math.sqrt(x.size)
    return (mean, mean - half, mean + half)


def margin_of_error(values, confidence: float = 0.95) -> float:
    """z * sd / sqrt(n) of `values` (Talking Turns A.8, eq. 10: sd over a threshold sweep).

    >>> round(margin_of_error([1, 2, 3]), 2)  # 1.96 * 1 / sqrt(3)
    1.13
    >>> margin_of_error([5])
    nan
    """
    x = np.asarray(list(values), dtype=float)
    if x.size < 2:
        return math.nan
    return z_value(confidence) * float(x.std(ddof=1)) / math.sqrt(x.size)


def concordance_counts(positive_scores, negative_scores) -> tuple[int, int, int]:
    """(concordant, discordant, tied) over all positive x negative score pairs.

    Positive 3 beats 1 and 2, loses to 4; positive 2 beats 1, ties 2, loses to 4:

    >>> concordance_counts([3, 2], [1, 2, 4])
    (3, 2, 1)
    """
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
    """Share of untied (positive, negative) pairs where the positive scores higher; nan if none.

    C = concordant / (concordant + discordant).

    >>> c_index([3, 2], [1, 2, 4])  # 3 concordant, 2 discordant, 1 tie left out
    0.6
    >>> c_index([1], [1])
    nan
    """
    concordant, discordant, _ = concordance_counts(positive_scores, negative_scores)
    if concordant + discordant == 0:
        return math.nan
    return concordant / (concordant + discordant)


def interval_label(clusters: int, unit: str = "sessions") -> str:
    """What an interval is over, for tables and hovers: "95 % CI over 7 sessions", or why there
    is none: "n/a: 1 session". `unit` is plural ("sessions", "source conversations").

    >>> interval_label(7)
    '95 % CI over 7 sessions'
    >>> interval_label(1, "source conversations")
    'n/a: 1 source conversation'
    """
    if clusters >= 2:
        return f"95 % CI over {clusters} {unit}"
    return f"n/a: {clusters} {unit[:-1] if clusters == 1 and unit.endswith('s') else unit}"


BOOTSTRAP_RESAMPLES = 999
BOOTSTRAP_SEED = 0  # fixed, so that a report shows the same interval each time it is made


def expanded_confidence(confidence: float, clusters: int) -> float:
    """The level at which the percentiles of an expanded percentile interval are read: with k
    clusters, 2 * Phi(sqrt(k / (k - 1)) * t_(k-1)) - 1 (0.9918 for 95 % and 7 sessions, 0.968
    for 20). Kept below 1 so that scipy reads the extreme resamples rather than failing.

    >>> round(expanded_confidence(0.95, 7), 4), round(expanded_confidence(0.95, 20), 3)
    (0.9918, 0.968)
    """
    from scipy import stats as scipy_stats
    if clusters < 2:
        raise ValueError(f"an interval over clusters needs at least two, got {clusters}")
    t = float(scipy_stats.t.ppf(0.5 + confidence / 2.0, clusters - 1))
    level = 2.0 * NormalDist().cdf(math.sqrt(clusters / (clusters - 1)) * t) - 1.0
    return min(level, 1.0 - 1e-9)


def _draw_counts(indices: np.ndarray, clusters: int) -> np.ndarray:
    """(..., clusters) how often each cluster occurs in each resample of cluster indices (..., n)."""
    rows = indices.reshape(-1, indices.shape[-1])
    offsets = np.arange(len(rows))[:, None] * clusters
    counts = np.bincount((rows + offsets).ravel(), minlength=len(rows) * clusters)
    return counts.reshape(*indices.shape[:-1], clusters)


def cluster_bootstrap_interval(statistic, clusters: int, confidence: float = 0.95,
                               n_resamples: int = BOOTSTRAP_RESAMPLES,
                               seed: int = BOOTSTRAP_SEED) -> tuple[float, float] | None:
    """(low, high) expanded percentile bootstrap interval over `clusters` clusters drawn with
    replacement (`expanded_confidence`).

    `statistic(weights)` gets weights (..., clusters), how often each cluster was drawn, and
    returns the pooled statistic of each such sample (...,): the data passed to
    scipy.stats.bootstrap are the cluster indices, the statistic looks up the clusters' sums.
    None with fewer than two clusters (one cluster says nothing about how clusters vary) or
    when some resample has no value (nan).

    The share of clusters that hold a 1 (3 of 4): some resamples draw only 0s, some only 1s.

    >>> hits = np.array([1.0, 0.0, 1.0, 1.0])
    >>> cluster_bootstrap_interval(lambda w: (w @ hits) / w.sum(axis=-1), 4)
    (0.0, 1.0)
    >>> cluster_bootstrap_interval(lambda w: w.sum(axis=-1), 1) is None
    True
    """
    from scipy import stats as scipy_stats
    if clusters < 2:
        return None

    def on_indices(indices, axis=-1):
        return statistic(_draw_counts(np.moveaxis(indices, axis, -1), clusters))

    with warnings.catch_warnings():  # a resample without a value: scipy warns, we return None
        warnings.simplefilter("ignore", scipy_stats.DegenerateDataWarning)
        result = scipy_stats.bootstrap((np.arange(clusters),), on_indices, vectorized=True, method="percentile",
                                       n_resamples=n_resamples,
                                       confidence_level=expanded_confidence(confidence, clusters),
                                       rng=np.random.default_rng(seed))
    low, high = float(result.confidence_interval.low), float(result.confidence_interval.high)
    return None if math.isnan(low) or math.isnan(high) else (low, high)


def ratio_of_sums_interval(numerators, denominators, confidence: float = 0.95,
                           n_resamples: int = BOOTSTRAP_RESAMPLES,
                           seed: int = BOOTSTRAP_SEED) -> tuple[float, float] | None:
    """Interval of sum(numerators) / sum(denominators), one (numerator, denominator) per
    cluster (e.g. agreeing instances and instances of one session), by resampling clusters.
    Clusters with a zero denominator hold no units and are left out; None with fewer than two.

    Three sessions agreeing on 3, 1 and 2 of 4 instances: 6 / 12 = 0.5 pooled.

    >>> ratio_of_sums_interval([3, 1, 2], [4, 4, 4])
    (0.25, 0.75)
    >>> ratio_of_sums_interval([1, 5], [2, 0]) is None  # the second holds no instances
    True
    """
    num = np.asarray(list(numerators), dtype=float)
    den = np.asarray(list(denominators), dtype=float)
    kept = den > 0
    num, den = num[kept], den[kept]
    return cluster_bootstrap_interval(lambda w: (w @ num) / (w @ den), len(num), confidence, n_resamples, seed)


def proportion_interval(numerators, denominators, confidence: float = 0.95,
                        n_resamples: int = BOOTSTRAP_RESAMPLES,
                        seed: int = BOOTSTRAP_SEED) -> tuple[float, float] | None:
    """`ratio_of_sums_interval` of a proportion (numerators <= denominators). Where every cluster
    is at 0 % or every one at 100 %, no resample differs and the bootstrap would claim certainty
    ([1, 1]); there the interval is Wilson's with the k clusters as the sample size (k of k),
    which says how little k clusters show (k = 4: [0.51, 1]).

    >>> proportion_interval([3, 1, 2], [4, 4, 4])
    (0.25, 0.75)
    >>> [round(x, 2) for x in proportion_interval([2, 3, 1, 4], [2, 3, 1, 4])]  # all at 100 %
    [0.51, 1.0]
    """
    num = np.asarray(list(numerators), dtype=float)
    den = np.asarray(list(denominators), dtype=float)
    kept = den > 0
    num, den = num[kept], den[kept]
    if len(num) >= 2 and (np.all(num == den) or np.all(num == 0)):
        return wilson_interval(len(num) if num[0] > 0 else 0, len(num), confidence)
    return ratio_of_sums_interval(num, den, confidence, n_resamples, seed)

"""Statistics of participants' questionnaire answers: ratings per system, within-participant tests,
a Bradley-Terry (Plackett-Luce) scale of the systems from the rankings, and call-order effects.

Every participant talks to several systems, so the participant, not the call, is the unit: a
participant's answers for one system (or one call position) are averaged into one value, intervals
resample participants, and tests compare systems within participants (signed-rank or Friedman).
Below `MIN_PARTICIPANTS` complete participants no test is run and the result says why.

Ratings keep their scale's direction: on a reverse-keyed item (e.g. "interrupted me") a higher
median is worse. Effect sizes: the matched-pairs rank-biserial correlation r (positive when the
first system of the pair is rated higher; -1..1) and Kendall's W (0: no agreement among
participants on an order of the systems, 1: all order them alike).
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

# choix and scipy.stats are imported where they are used: they take about a second, which most commands never need.

#: Fewer complete participants than this: no test, only the summaries.
MIN_PARTICIPANTS = 5
CONFIDENCE = 0.95
#: Resamples of the bootstrap intervals (scipy's percentile bootstrap; Bradley-Terry refits).
N_RESAMPLES = 2000
N_RANKING_RESAMPLES = 500
#: choix's I-LSR regulariser (a small prior rate between every two systems): keeps the log-strengths
#: finite when one system always wins, as it often does in a resample of a few participants.
BT_REGULARISER = 0.1


@dataclass(frozen=True)
class Rating:
    participant: str
    session_id: int
    system: str
    position: int  # 1-based order of the call among the participant's calls
    item: str
    value: float


@dataclass(frozen=True)
class ItemSummary:
    item: str
    system: str
    n_participants: int
    median: float  # of the participants' values (a participant's answers for the system averaged)
    median_low: float | None  # 95 % bootstrap interval over participants; None below 2 participants
    median_high: float | None
    counts: dict[float, int]  # answer value -> how many answers (calls) gave it


@dataclass(frozen=True)
class PairwiseComparison:
    first: str
    second: str
    n_participants: int
    median_difference: float  # of first - second, over participants
    statistic: float | None  # Wilcoxon signed-rank statistic (scipy's)
    p_value: float | None
    p_holm: float | None  # Holm-adjusted over the pairs of the same test
    rank_biserial: float | None  # > 0: first rated higher


@dataclass(frozen=True)
class WithinParticipantTest:
    item: str
    compared: tuple[str, ...]  # the systems (or call positions) compared
    n_participants: int  # participants with an answer for every compared one
    test: str | None  # "wilcoxon", "friedman"; None: no test (see reason)
    statistic: float | None
    p_value: float | None
    effect_size: float | None
    effect_size_name: str | None  # "rank-biserial r", "Kendall's W"
    pairs: tuple[PairwiseComparison, ...]  # post-hoc (or the one pair)
    reason: str | None  # why there is no test


@dataclass(frozen=True)
class SystemStrength:
    system: str
    strength: float  # log-strength (Bradley-Terry / Plackett-Luce), mean 0 over the systems
    low: float  # 95 % bootstrap interval over participants' rankings
    high: float
    n_rankings: int  # rankings (or picks) that include the system
    p_over_next: float | None  # probability of being preferred over the next weaker system; None: last


@dataclass(frozen=True)
class PositionSummary:
    position: int
    n_participants: int
    median: float
    median_low: float | None
    median_high: float | None


def holm(p_values: list[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given.

    >>> holm([0.01, 0.04, 0.03, 0.005])
    [0.03, 0.06, 0.06, 0.02]
    """
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    adjusted, running = [0.0] * len(p_values), 0.0
    for step, i in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - step) * p_values[i]))
        adjusted[i] = round(running, 12)
    return adjusted


def item_summaries(ratings: list[Rating], item: str, seed: int = 0) -> list[ItemSummary]:
    """Per system (in name order): participants, median, its bootstrap interval, answer counts.

    >>> rs = [Rating(f"p{i}", i, "A", 1, "q", v) for i, v in enumerate([4, 5, 4, 3, 5])]
    >>> s = item_summaries(rs, "q")[0]
    >>> (s.system, s.n_participants, s.median, s.counts)
    ('A', 5, 4.0, {3: 1, 4: 2, 5: 2})
    >>> s.median_low <= 4.0 <= s.median_high
    True
    """
    by_system = _values_by_participant(ratings, item, lambda r: r.system)
    summaries = []
    for system in sorted(by_system):
        values = np.array(list(by_system[system].values()))
        low, high = _median_interval(values, seed)
        counts = _answer_counts([r.value for r in ratings if r.item == item and r.system == system])
        summaries.append(ItemSummary(item, system, len(values), float(np.median(values)), low, high, counts))
    return summaries


def within_participant_test(ratings: list[Rating], item: str) -> WithinParticipantTest:
    """Do the systems differ on `item`, within participants? Wilcoxon for 2 systems, Friedman for more.

    >>> rs = [Rating(f"p{i}", 2 * i + k, s, k + 1, "q", v)
    ...       for i, (a, b) in enumerate([(4, 2), (5, 3), (4, 4), (3, 1), (5, 2), (4, 3)])
    ...       for k, (s, v) in enumerate([("A", a), ("B", b)])]
    >>> t = within_participant_test(rs, "q")
    >>> (t.test, t.n_participants, t.effect_size_name, t.effect_size)
    ('wilcoxon', 6, 'rank-biserial r', 1.0)
    """
    return _compare_within(item, _values_by_participant(ratings, item, lambda r: r.system))


def order_effects(ratings: list[Rating], item: str, seed: int = 0) -> list[PositionSummary]:
    """Per call position (1st, 2nd, ...): participants, median and its bootstrap interval.

    >>> rs = [Rating("p1", 1, "A", 1, "q", 4), Rating("p1", 2, "B", 2, "q", 2)]
    >>> [(p.position, p.n_participants, p.median) for p in order_effects(rs, "q")]
    [(1, 1, 4.0), (2, 1, 2.0)]
    """
    by_position = _values_by_participant(ratings, item, lambda r: r.position)
    summaries = []
    for position in sorted(by_position):
        values = np.array(list(by_position[position].values()))
        low, high = _median_interval(values, seed)
        summaries.append(PositionSummary(position, len(values), float(np.median(values)), low, high))
    return summaries


def order_effect_test(ratings: list[Rating], item: str) -> WithinParticipantTest:
    """Does the call's position matter, within participants? `compared` names the positions
    ("call 1", ...): the positions that at least `MIN_PARTICIPANTS` participants reached.

    >>> within = order_effect_test([Rating("p1", 1, "A", 1, "q", 4), Rating("p1", 2, "B", 2, "q", 2)], "q")
    >>> (within.test, within.n_participants, within.reason)
    (None, 1, 'only 1 participant(s) answered at every compared position; at least 5 are needed')
    """
    by_position = _values_by_participant(ratings, item, lambda r: f"call {r.position}")
    reached = [p for p in by_position if len(by_position[p]) >= MIN_PARTICIPANTS] or list(by_position)
    return _compare_within(item, {p: by_position[p] for p in sorted(reached, key=lambda p: int(p.split()[1]))},
                           noun="position")


def bradley_terry(rankings: list[tuple[str, ...]], systems: list[str], seed: int = 0,
                  n_resamples: int = N_RANKING_RESAMPLES) -> list[SystemStrength]:
    """Log-strengths of the systems from participants' rankings, strongest first.

    A ranking is a tuple of systems, preferred first (a participant may rank only the systems they
    met); a tuple of one system is a pick ("most natural") and counts as preferred over every other
    system in `systems`. Both are read as successive top-1 choices (Plackett-Luce: a ranking
    (a, b, c) is a chosen from {a, b, c}, then b from {b, c}), fitted by choix (I-LSR, a small
    regulariser); intervals resample participants' rankings.

    >>> rankings = [("A", "B", "C")] * 6 + [("B", "A", "C")] * 3 + [("A",)] * 2
    >>> strengths = bradley_terry(rankings, ["A", "B", "C"], n_resamples=100)
    >>> [s.system for s in strengths]
    ['A', 'B', 'C']
    >>> 0.5 < strengths[0].p_over_next < 1 and strengths[-1].p_over_next is None
    True
    """
    index = {system: i for i, system in enumerate(systems)}
    per_ranking = [_top1_choices(ranking, systems, index) for ranking in rankings]
    if not any(per_ranking):
        raise ValueError("no ranking compares two systems")
    strength = _fit_top1(len(systems), per_ranking)
    rng = np.random.default_rng(seed)
    boot = np.array([_fit_top1(len(systems), [per_ranking[i] for i in rng.integers(len(rankings), size=len(rankings))])
                     for _ in range(n_resamples)])
    lows, highs = np.quantile(boot, [(1 - CONFIDENCE) / 2, (1 + CONFIDENCE) / 2], axis=0)
    order = sorted(range(len(systems)), key=lambda i: -strength[i])
    result = []
    for rank, i in enumerate(order):
        nxt = order[rank + 1] if rank + 1 < len(order) else None
        p_over_next = None if nxt is None else float(1 / (1 + np.exp(strength[nxt] - strength[i])))
        n_rankings = sum(1 for ranking in rankings if systems[i] in ranking or len(ranking) == 1)
        result.append(SystemStrength(systems[i], float(strength[i]), float(lows[i]), float(highs[i]),
                                     n_rankings, p_over_next))
    return result


def _top1_choices(ranking: tuple[str, ...], systems: list[str], index: dict[str, int]) -> list[tuple[int, list[int]]]:
    unknown = [s for s in ranking if s not in index]
    if unknown:
        raise ValueError(f"ranking names unknown system(s) {', '.join(unknown)}")
    if len(ranking) == 1:
        return [(index[ranking[0]], [index[s] for s in systems if s != ranking[0]])]
    return [(index[chosen], [index[s] for s in ranking[place + 1:]]) for place, chosen in enumerate(ranking[:-1])]


def _fit_top1(n_systems: int, per_ranking: list[list[tuple[int, list[int]]]]) -> np.ndarray:
    import choix
    choices = [choice for choices in per_ranking for choice in choices]
    if not choices:  # a resample of picks-free, single-system rankings: no information
        return np.zeros(n_systems)
    params = choix.ilsr_top1(n_systems, choices, alpha=BT_REGULARISER)
    return params - params.mean()


def _values_by_participant(ratings: list[Rating], item: str, group_of) -> dict:
    """group -> participant -> the participant's mean answer in that group."""
    answers: dict = defaultdict(lambda: defaultdict(list))
    for rating in ratings:
        if rating.item == item and rating.value is not None and np.isfinite(rating.value):
            answers[group_of(rating)][rating.participant].append(float(rating.value))
    return {group: {p: float(np.mean(v)) for p, v in by_p.items()} for group, by_p in answers.items()}


def _median_interval(values: np.ndarray, seed: int) -> tuple[float | None, float | None]:
    from scipy import stats
    if len(values) < 2:
        return None, None
    if np.all(values == values[0]):
        return float(values[0]), float(values[0])
    # Percentile, not BCa: BCa's acceleration is undefined for the heavily tied medians of a scale.
    result = stats.bootstrap((values,), np.median, confidence_level=CONFIDENCE, n_resamples=N_RESAMPLES,
                             method="percentile", rng=np.random.default_rng(seed))
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def _answer_counts(values: list[float]) -> dict[float, int]:
    counts: dict[float, int] = defaultdict(int)
    for value in values:
        counts[int(value) if float(value).is_integer() else value] += 1
    return dict(sorted(counts.items()))


def _compare_within(item: str, by_group: dict, noun: str = "system") -> WithinParticipantTest:
    from scipy import stats
    groups = tuple(by_group)
    complete = sorted(set.intersection(*(set(by_group[g]) for g in groups))) if groups else []
    table = np.array([[by_group[g][p] for g in groups] for p in complete]).reshape(len(complete), len(groups))

    def no_test(reason: str) -> WithinParticipantTest:
        return WithinParticipantTest(item, groups, len(complete), None, None, None, None, None, (), reason)

    if len(groups) < 2:
        return no_test(f"needs two {noun}s or more with answers; found {len(groups)}")
    if len(complete) < MIN_PARTICIPANTS:
        return no_test(f"only {len(complete)} participant(s) answered at every compared {noun}; "
                       f"at least {MIN_PARTICIPANTS} are needed")
    if np.all(table == table[:, :1]):
        return no_test(f"every participant gave every {noun} the same answer")
    pairs = _pairwise(groups, table)
    if len(groups) == 2:
        pair = pairs[0]
        return WithinParticipantTest(item, groups, len(complete), "wilcoxon", pair.statistic, pair.p_value,
                                     pair.rank_biserial, "rank-biserial r", pairs, None)
    chi2, p_value = stats.friedmanchisquare(*table.T)
    kendall_w = chi2 / (len(complete) * (len(groups) - 1))
    return WithinParticipantTest(item, groups, len(complete), "friedman", float(chi2), float(p_value),
                                 float(kendall_w), "Kendall's W", pairs, None)


def _pairwise(groups: tuple, table: np.ndarray) -> tuple[PairwiseComparison, ...]:
    from scipy import stats
    raw = []
    for a, b in itertools.combinations(range(len(groups)), 2):
        differences = table[:, a] - table[:, b]
        if np.all(differences == 0):
            raw.append((a, b, differences, None, None, 0.0))
            continue
        result = stats.wilcoxon(table[:, a], table[:, b])
        raw.append((a, b, differences, float(result.statistic), float(result.pvalue), _rank_biserial(differences)))
    tested = [p for *_, p, _ in raw if p is not None]
    adjusted = iter(holm(tested))
    return tuple(PairwiseComparison(groups[a], groups[b], len(table), float(np.median(d)), statistic, p,
                                    None if p is None else next(adjusted), r)
                 for a, b, d, statistic, p, r in raw)


def _rank_biserial(differences: np.ndarray) -> float:
    """Matched-pairs rank-biserial r: (positive rank sum - negative rank sum) / all, zero differences dropped."""
    from scipy import stats
    nonzero = differences[differences != 0]
    ranks = stats.rankdata(np.abs(nonzero))
    return float((ranks[nonzero > 0].sum() - ranks[nonzero < 0].sum()) / ranks.sum())

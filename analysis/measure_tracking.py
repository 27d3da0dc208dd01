"""Which automatic measure tracks what participants felt: the Spearman correlation, over sessions,
of every automatic measure (floor-transfer offsets, latency, interruptions, judge and naturalness
scores, examiner values...) with every rating item of the questionnaire.

A participant's sessions are not independent (one person's leniency and one person's way of
talking shape all of them), so every interval resamples participants: a bootstrap resample draws
participants with replacement and keeps all of each drawn participant's sessions. It is computed
as a weighting (a session weighs as often as its participant was drawn), and the weighted ranks
equal the ranks of the duplicated sessions, ties averaged, so each resample ranks every column
once and all (measure, item) pairs follow at once.

Many pairs are looked at, so a pair is called distinguishable from none only when two corrections
for all of them agree:

- its simultaneous 95 % interval excludes 0: the bootstrap max-|t|. In Fisher z = atanh(rho)
  space every pair's bootstrap deviations are studentised by their bootstrap standard error,
  t = (z* - z) / se; the 95 % quantile c of the largest |t| over the pairs gives every pair
  tanh(z -/+ c se') (se' = se * sqrt(P / (P - 1)) for P participants, the bootstrap's
  small-sample shortfall). The uncorrected interval uses the pair's own 95 % quantile of |t|.
- its max-T permutation p-value (`p_corrected`, Westfall-Young single step) is below 0.05: the
  ratings of whole participants are handed to other participants with as many sessions (sessions
  matched in order), which keeps each person's own pattern in both the measures and the ratings
  and breaks only their link; p is the share of permutations whose largest standardised |rho|
  over the pairs reaches the pair's own.

The permutation holds the chance that a study with no relation at all shows any distinguishable
pair to 5 % (4.9 % in 700 simulated studies of 30 participants, 4 measures x 3 items); the
bootstrap's interval alone let 6.4 % through (1100 such studies), too many to rely on by itself. Pairs behind fewer than
`MIN_PARTICIPANTS` participants get no interval and no p.

On a reverse-keyed item (e.g. "made me wait") a higher answer is worse: a positive rho there means
the measure goes with worse-felt turn-taking, and each row says so in words (`reading`).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from analysis.questionnaire_stats import Rating
from studies.questionnaire import DEFAULT_AFTER_CALL

MIN_PARTICIPANTS = 5
CONFIDENCE = 0.95
#: |rho| is capped below 1 so that z = atanh(rho) stays finite for a perfectly ordered resample.
RHO_CAP = 0.9999
CORRECTION = ("distinguishable: the simultaneous 95 % interval (max-|t| bootstrap over participants, "
              "Fisher z) excludes 0 and the max-T permutation p (participants' ratings swapped whole) < 0.05")


@dataclass(frozen=True)
class TrackingRow:
    measure: str
    item: str
    reverse_keyed: bool  # a higher answer on the item is worse
    n_sessions: int
    n_participants: int
    rho: float  # Spearman, over sessions
    low: float | None  # uncorrected 95 % interval (participants resampled); None: too few participants
    high: float | None
    corrected_low: float | None  # simultaneous over all pairs
    corrected_high: float | None
    p_corrected: float | None  # max-T permutation p over all pairs
    distinguishable: bool  # the corrected interval excludes 0 and p_corrected < 0.05
    reading: str  # e.g. "higher response_latency_s, worse on made_me_wait"


@dataclass(frozen=True)
class TrackingResult:
    rows: tuple[TrackingRow, ...]  # distinguishable first, then by |rho|
    n_sessions: int
    n_participants: int
    n_boot: int
    correction: str
    verdict: str


def measure_rating_correlations(measures: dict[int, dict[str, float | None]], ratings: list[Rating],
                                items: list[str] | None = None, n_boot: int = 2000, seed: int = 0,
                                reverse_keyed: set[str] | None = None) -> TrackingResult:
    """Every (measure, item) pair's rank correlation over sessions, with participant-bootstrap intervals.

    `reverse_keyed`: the items on which higher is worse; None: those of the default questionnaire.

    >>> rng = np.random.default_rng(1)
    >>> latency = {s: float(rng.uniform(0.3, 2.0)) for s in range(40)}
    >>> ratings = [Rating(f"p{s // 2}", s, "AB"[s % 2], s % 2 + 1, "made_me_wait",
    ...                   float(np.clip(round(1 + 2 * latency[s] + rng.normal(0, 0.5)), 1, 5))) for s in range(40)]
    >>> result = measure_rating_correlations({s: {"latency_s": v} for s, v in latency.items()}, ratings, n_boot=300)
    >>> row = result.rows[0]
    >>> (row.n_sessions, row.n_participants, row.distinguishable, row.reverse_keyed, row.rho > 0.5)
    (40, 20, True, True, True)
    >>> row.reading
    'higher latency_s, worse on made_me_wait'
    """
    reverse = {i.id for i in DEFAULT_AFTER_CALL if i.reverse_keyed} if reverse_keyed is None else set(reverse_keyed)
    table = _session_table(measures, ratings, items)
    if table is None:
        return TrackingResult((), 0, 0, n_boot, CORRECTION, "No session has both automatic measures and ratings yet.")
    sessions, participant_of, x, x_names, y, y_names = table
    n_participants = int(participant_of.max()) + 1
    pairs = [(m, i) for m in range(len(x_names)) for i in range(len(y_names))]
    rng = np.random.default_rng(seed)
    rho, boot_rho = _spearman_with_bootstrap(x, y, pairs, participant_of, n_boot, rng)
    permuted_rho = _spearman_permuted(x, y, pairs, participant_of, n_boot, rng)
    counts = [_support(x[:, m], y[:, i], participant_of) for m, i in pairs]
    eligible = np.array([np.isfinite(r) and n_p >= MIN_PARTICIPANTS for r, (_, n_p) in zip(rho, counts)])
    bounds = _intervals(rho, boot_rho, eligible, n_participants)
    p_corrected = _max_t_p_values(rho, permuted_rho, eligible)
    rows = []
    for k, (m, i) in enumerate(pairs):
        if not np.isfinite(rho[k]):
            continue
        low, high, c_low, c_high = bounds[k]
        p = p_corrected[k]
        item = y_names[i]
        direction = "better" if (rho[k] > 0) != (item in reverse) else "worse"
        distinguishable = c_low is not None and (c_low > 0 or c_high < 0) and p is not None and p < 1 - CONFIDENCE
        rows.append(TrackingRow(x_names[m], item, item in reverse, counts[k][0], counts[k][1], float(rho[k]),
                                low, high, c_low, c_high, p, distinguishable,
                                f"higher {x_names[m]}, {direction} on {item}"))
    rows.sort(key=lambda r: (not r.distinguishable, -abs(r.rho), r.measure, r.item))
    verdict = _verdict(rows, len(sessions), n_participants)
    return TrackingResult(tuple(rows), len(sessions), n_participants, n_boot, CORRECTION, verdict)


def _session_table(measures, ratings, items):
    """Sessions with a measure and a rating: their participant index, measures (x) and mean answers (y)."""
    answers: dict = defaultdict(lambda: defaultdict(list))
    participant_of_session: dict[int, str] = {}
    for rating in ratings:
        if (items is None or rating.item in items) and rating.value is not None and np.isfinite(rating.value):
            answers[rating.session_id][rating.item].append(float(rating.value))
            participant_of_session[rating.session_id] = rating.participant
    sessions = sorted(s for s in answers if s in measures
                      and any(v is not None and np.isfinite(v) for v in measures[s].values()))
    if not sessions:
        return None
    x_names = sorted({name for s in sessions for name in measures[s]})
    y_names = sorted({item for s in sessions for item in answers[s]})
    x = np.array([[_finite(measures[s].get(name)) for name in x_names] for s in sessions])
    y = np.array([[np.mean(answers[s][item]) if answers[s].get(item) else np.nan for item in y_names]
                  for s in sessions])
    people = sorted({participant_of_session[s] for s in sessions})
    index = {p: k for k, p in enumerate(people)}
    participant_of = np.array([index[participant_of_session[s]] for s in sessions])
    return sessions, participant_of, x, x_names, y, y_names


def _finite(value) -> float:
    return float(value) if value is not None and np.isfinite(value) else np.nan


def _support(x_column: np.ndarray, y_column: np.ndarray, participant_of: np.ndarray) -> tuple[int, int]:
    valid = np.isfinite(x_column) & np.isfinite(y_column)
    return int(valid.sum()), len(np.unique(participant_of[valid]))


def _spearman_with_bootstrap(x, y, pairs, participant_of, n_boot, rng):
    """Each pair's Spearman rho (all sessions) and its n_boot participant-resampled values (n_boot x pairs)."""
    n_participants = int(participant_of.max()) + 1
    drawn = rng.multinomial(n_participants, np.full(n_participants, 1 / n_participants), size=n_boot)
    weights = np.vstack([np.ones(len(participant_of)), drawn[:, participant_of]]).astype(float)
    cache: dict = {}

    def standardised(side: str, column: np.ndarray, valid: np.ndarray) -> np.ndarray:
        key = (side, column.tobytes(), valid.tobytes())
        if key not in cache:
            here = weights * valid
            ranks = _weighted_ranks(np.where(valid, column, 0.0), here)
            cache[key] = _standardise(ranks, here) * (here if side == "x" else 1.0)
        return cache[key]

    rho = np.full((n_boot + 1, len(pairs)), np.nan)
    for k, (m, i) in enumerate(pairs):
        valid = np.isfinite(x[:, m]) & np.isfinite(y[:, i])
        if valid.sum() >= 3:
            rho[:, k] = np.einsum("bs,bs->b", standardised("x", x[:, m], valid), standardised("y", y[:, i], valid))
    return rho[0], rho[1:]


def _spearman_permuted(x, y, pairs, participant_of, n_permutations, rng):
    """Each pair's rho (n_permutations x pairs) after handing every participant's ratings to another
    participant with as many sessions (their sessions matched in order): the null of no relation."""
    permutation = _block_permutations(participant_of, n_permutations, rng)
    inverse = np.argsort(permutation, axis=1)
    x_valid, y_valid = np.isfinite(x), np.isfinite(y)
    cache: dict = {}

    def x_side(m: int, i: int) -> np.ndarray:
        key = ("x", m, y_valid[:, i].tobytes())
        if key not in cache:
            weights = (x_valid[:, m] & y_valid[:, i][permutation]).astype(float)
            ranks = _weighted_ranks(np.where(x_valid[:, m], x[:, m], 0.0), weights)
            cache[key] = _standardise(ranks, weights) * weights
        return cache[key]

    def y_side(m: int, i: int) -> np.ndarray:
        key = ("y", i, x_valid[:, m].tobytes())
        if key not in cache:
            # Ranked in the ratings' own order (each row weighs if its partner's measure exists), then moved.
            weights = (y_valid[:, i] & x_valid[:, m][inverse]).astype(float)
            own_order = _standardise(_weighted_ranks(np.where(y_valid[:, i], y[:, i], 0.0), weights), weights)
            cache[key] = np.take_along_axis(own_order, permutation, axis=1)
        return cache[key]

    rho = np.full((n_permutations, len(pairs)), np.nan)
    for k, (m, i) in enumerate(pairs):
        if ((x_valid[:, m] & y_valid[:, i][permutation]).sum(axis=1) >= 3).all():
            rho[:, k] = np.einsum("bs,bs->b", x_side(m, i), y_side(m, i))
    return rho


def _block_permutations(participant_of: np.ndarray, n_permutations: int, rng) -> np.ndarray:
    """n_permutations x sessions: session s is paired with the ratings of session permutation[b, s]
    (participants with as many sessions swapped whole; one alone with their number of sessions stays)."""
    permutation = np.tile(np.arange(len(participant_of)), (n_permutations, 1))
    sessions_of = [np.flatnonzero(participant_of == p) for p in range(int(participant_of.max()) + 1)]
    for size in {len(s) for s in sessions_of}:
        block = np.array([s for s in sessions_of if len(s) == size])  # participants x sessions
        if len(block) < 2:
            continue
        shuffled = np.argsort(rng.random((n_permutations, len(block))), axis=1)
        permutation[:, block.ravel()] = block[shuffled].reshape(n_permutations, -1)
    return permutation


def _max_t_p_values(rho: np.ndarray, permuted_rho: np.ndarray, eligible: np.ndarray) -> list[float | None]:
    """Single-step max-T p-values: the share of permutations whose largest standardised |rho| over
    the pairs reaches the pair's own."""
    spread = np.full(len(rho), np.nan)
    measured = np.isfinite(permuted_rho).any(axis=0)  # an all-NaN column: nanstd warns
    if measured.any():
        spread[measured] = np.nanstd(permuted_rho[:, measured], axis=0)
    usable = eligible & np.isfinite(spread) & (spread > 0)
    if not usable.any():
        return [None] * len(rho)
    standardised = np.abs(permuted_rho[:, usable]) / spread[usable]
    largest = np.nanmax(np.where(np.isfinite(standardised), standardised, -np.inf), axis=1)
    return [float((1 + np.sum(largest >= abs(rho[k]) / spread[k])) / (1 + len(largest))) if usable[k] else None
            for k in range(len(rho))]


def _weighted_ranks(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Average ranks of `values` (S) as if each were repeated `weights` (B x S) times, per row of weights."""
    weights = np.asarray(weights, dtype=float)
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    group_weight = np.add.reduceat(weights[:, order], starts, axis=1)
    group_rank = np.cumsum(group_weight, axis=1) - group_weight + (group_weight + 1) / 2
    group_of = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, len(values)]))
    result = np.empty_like(weights)
    result[:, order] = group_rank[:, group_of]
    return result


def _standardise(ranks: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Ranks centred and scaled per row (weighted), so that a correlation is the weighted sum of products;
    NaN in a row whose ranks do not vary."""
    total = weights.sum(axis=1, keepdims=True)
    mean = np.divide((weights * ranks).sum(axis=1, keepdims=True), total, out=np.full_like(total, np.nan),
                     where=total > 0)
    centred = ranks - mean
    norm = np.sqrt((weights * centred * centred).sum(axis=1, keepdims=True))
    # NaN, not inf, where the ranks do not vary: inf times a zero weight warned on every pass
    return np.divide(centred, norm, out=np.full_like(centred, np.nan), where=norm > 0)


def _intervals(rho: np.ndarray, boot_rho: np.ndarray, eligible: np.ndarray, n_participants: int) -> list[tuple]:
    """Per pair: (low, high, corrected_low, corrected_high), all None where not eligible."""
    z = np.arctanh(np.clip(rho, -RHO_CAP, RHO_CAP))
    boot_z = np.arctanh(np.clip(boot_rho, -RHO_CAP, RHO_CAP))
    se = np.full(len(rho), np.nan)
    spread = np.isfinite(boot_z).sum(axis=0) > 1  # a spread needs two values (nanstd warns otherwise)
    if spread.any():
        se[spread] = np.nanstd(boot_z[:, spread], axis=0, ddof=1)
    eligible = eligible & np.isfinite(se) & (se > 0)
    if not eligible.any():
        return [(None,) * 4] * len(rho)
    deviation = np.abs(boot_z[:, eligible] - z[eligible]) / se[eligible]
    single = np.nanquantile(deviation, CONFIDENCE, axis=0)
    largest = np.nanmax(np.where(np.isfinite(deviation), deviation, -np.inf), axis=1)
    largest = largest[np.isfinite(largest)]
    simultaneous = np.quantile(largest, CONFIDENCE)
    # The bootstrap variance over P participants is short by (P - 1) / P; restored as in cluster-robust errors.
    half = se * np.sqrt(n_participants / max(n_participants - 1, 1))
    result, columns = [], iter(range(eligible.sum()))
    for k in range(len(rho)):
        if not eligible[k]:
            result.append((None,) * 4)
            continue
        c = next(columns)
        result.append((float(np.tanh(z[k] - single[c] * half[k])), float(np.tanh(z[k] + single[c] * half[k])),
                       float(np.tanh(z[k] - simultaneous * half[k])), float(np.tanh(z[k] + simultaneous * half[k]))))
    return result


def _verdict(rows: list[TrackingRow], n_sessions: int, n_participants: int) -> str:
    head = f"{n_sessions} sessions from {n_participants} participants: "
    if n_participants < MIN_PARTICIPANTS:
        return head + (f"too few participants to tell which measure tracks the ratings "
                       f"(at least {MIN_PARTICIPANTS} are needed).")
    found = [r for r in rows if r.distinguishable]
    if not found:
        return head + "no measure is distinguishable from none."
    best = found[0]
    more = f"; {len(found) - 1} more pair(s) distinguishable" if len(found) > 1 else ""
    return head + (f"{best.measure} tracks '{best.item}' (rho {best.rho:.2f} "
                   f"[{best.corrected_low:.2f}, {best.corrected_high:.2f}], corrected; {best.reading}){more}.")

"""Coverage of the judge metrics' intervals on simulated studies whose sessions differ in level.

Each simulated study has a true agreement rate; every session's own rate is drawn around it
(Beta, sd 0.12), and its instances come in runs (consecutive 40 ms chunks of one pause share
the outcome), as they do in real sessions. The interval over sessions must cover the study's
rate in at least 92 % of 200 studies; the old pooled Wilson interval, which takes every
instance as independent, is measured on the same studies.
"""

import numpy as np

from judge.metrics import Instances, summarize_metric
from turntaking.intervals import wilson_interval

THRESHOLD = 0.0


def simulated_session(rng, rate: float, runs: int) -> dict[str, Instances]:
    """One session's "speak_up" instances: all "speaks up", judged T (agreeing) at `rate`, in runs."""
    lengths = rng.geometric(1 / 6, runs)
    agrees = np.repeat(rng.random(runs) < rate, lengths)
    scores = np.where(agrees, THRESHOLD + 0.5, THRESHOLD - 0.5)
    return {"speak_up": Instances(np.arange(len(scores)), np.ones(len(scores), dtype=bool), scores)}


def simulated_study(rng, true_rate: float, sessions: int, sd: float = 0.12) -> list[dict[str, Instances]]:
    concentration = true_rate * (1 - true_rate) / sd**2 - 1
    rates = rng.beta(true_rate * concentration, (1 - true_rate) * concentration, sessions)
    return [simulated_session(rng, r, int(rng.integers(5, 40))) for r in rates]


def coverage(studies: int, sessions: int, seed: int) -> tuple[float, float, list]:
    """(share of studies whose interval over sessions covers the true rate, the same for the
    pooled Wilson interval, the intervals over sessions)."""
    rng = np.random.default_rng(seed)
    covered = wilson_covered = 0
    intervals = []
    for _ in range(studies):
        true_rate = float(rng.uniform(0.55, 0.85))
        a = summarize_metric(simulated_study(rng, true_rate, sessions), "speak_up", THRESHOLD)["agreement"]["speaks up"]
        low, high = a["ci_95_percent"]
        covered += low <= 100 * true_rate <= high
        w_low, w_high = wilson_interval(a["agree"], a["n"])
        wilson_covered += w_low <= true_rate <= w_high
        intervals.append((low, high, a["percent"]))
    return covered / studies, wilson_covered / studies, intervals


def test_interval_over_sessions_covers_the_study_rate():
    covered, wilson_covered, intervals = coverage(200, sessions=12, seed=23)
    assert covered >= 0.92
    # The simulation is one where instances are dependent: the pooled Wilson interval misses.
    assert wilson_covered < 0.6
    for low, high, value in intervals:
        assert 0.0 <= low <= value <= high <= 100.0


def test_interval_stays_within_range_at_the_edges():
    rng = np.random.default_rng(5)
    sessions = [simulated_session(rng, rate, 10) for rate in (1.0, 1.0, 0.97, 1.0, 0.9)]
    a = summarize_metric(sessions, "speak_up", THRESHOLD)["agreement"]["speaks up"]
    low, high = a["ci_95_percent"]
    assert 0.0 <= low < a["percent"] <= high <= 100.0
    s_low, s_high = a["session_ci_95"]
    assert 0.0 <= s_low <= a["session_mean_percent"] <= s_high <= 100.0
    assert a["ci_unit"] == "95 % CI over 5 sessions"

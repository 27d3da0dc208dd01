"""A system's backchannels on the examiner's monologues, held against what Switchboard's listeners
would do on the same speech.

FDB's JSD compares each clip's backchannels with a reference histogram of that clip (the platform's
monologues: equal mass in every pause), so it rewards a backchannel in every pause: a system at a
human listener's rate cannot come near it. This report asks the question the other way round:
given the monologue's sentences and pauses, how many backchannels would Switchboard's listeners
start, and at which offsets from the end of the speaker's speech (turntaking.backchannel_timing:
rates per second of the speaker's turn, bin by bin, fitted on the training conversations)?

    rate_per_s             the system's backchannels per second of the monologue (first sentence's
                           start to last sentence's end)
    switchboard_rate_per_s what Switchboard's listeners would give on the same monologues
    rate_ratio             the two divided (1 is a listener's rate)
    timing_jsd             Jensen-Shannon distance (natural log, as FDB's) between the system's
                           onsets pooled over the examples and Switchboard's expected onsets, both
                           binned by offset from the speaker's IPU end; 0 is the listeners' timing,
                           sqrt(ln 2) = 0.833 shares no bin. None without any backchannel.
                           A few backchannels scatter over the bins by chance, which raises the
                           distance: of two systems, the one with fewer backchannels is the one
                           disadvantaged. Hence:
    listener_timing_jsd    the distance a listener timed exactly as Switchboard's would get with as
                           many backchannels (median of 2,000 draws of that many onsets from
                           Switchboard's expected offsets; `_ci90` its 5th-95th percentiles): the
                           floor the system's timing_jsd is read against

Intervals: 95 % over examples (the unit the task set samples), by turntaking.intervals' cluster
bootstrap (expanded percentile), as the platform's other pooled ratios; none for the timing when
some resample holds no backchannel. The system's
backchannels are FDB's (Silero segments of output.wav before its first take-over); the speaker's
speech is the task set's known sentence spans (example.json "speech"). Onsets before the first
sentence or after the last are counted in `outside` and left out of the rate and the timing.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from turntaking.backchannel_timing import (
    BackchannelTiming,
    bin_labels,
    onset_counts,
    switchboard_backchannel_timing,
)
from turntaking.intervals import cluster_bootstrap_interval, ratio_of_sums_interval

# scipy is imported where it is used: its modules take about a second, which most commands never need.

DISJOINT_JSD = float(np.sqrt(np.log(2.0)))  # the distance of two distributions that share no bin


def timing_jsd(observed: np.ndarray, expected: np.ndarray) -> float | None:
    from scipy.spatial.distance import jensenshannon
    if observed.sum() == 0 or expected.sum() == 0:
        return None
    return float(jensenshannon(observed / observed.sum(), expected / expected.sum()))


LISTENER_DRAWS = 2000


def listener_jsd(expected: np.ndarray, n: int, seed: int = 0) -> tuple[float, float, float] | None:
    """(median, 5th, 95th percentile) of the timing JSD of `n` onsets drawn from the offsets
    `expected` (a perfectly timed listener's sampling spread); None for no onset."""
    from scipy.spatial.distance import jensenshannon
    if n <= 0 or expected.sum() == 0:
        return None
    p = expected / expected.sum()
    draws = np.random.default_rng(seed).multinomial(n, p, size=LISTENER_DRAWS)
    distances = jensenshannon(draws / n, np.broadcast_to(p, draws.shape), axis=-1)
    low, median, high = np.percentile(distances, [5, 50, 95])
    return float(median), float(low), float(high)


def _pooled_jsd(observed: np.ndarray, expected: np.ndarray):
    """statistic(weights) for the cluster bootstrap: the timing JSD of each weighted pooling of the
    examples' histograms (nan where a resample holds no backchannel)."""
    from scipy.spatial.distance import jensenshannon
    def statistic(weights):
        pooled_observed, pooled_expected = weights @ observed, weights @ expected
        with np.errstate(invalid="ignore", divide="ignore"):
            return jensenshannon(pooled_observed, pooled_expected, axis=-1)  # normalises each row
    return statistic


def _as_list(interval):
    return None if interval is None else [float(interval[0]), float(interval[1])]


def backchannel_timing_report(task_dir: Path, fdb_rows: list[dict], timing: BackchannelTiming | None = None) -> dict:
    """The report above over the examples of `task_dir` that have their speech in example.json."""
    timing = timing or switchboard_backchannel_timing()
    observed, expected, turn_s, examples, outside = [], [], [], [], 0
    for row in fdb_rows:
        facts_path = Path(task_dir) / row["example"] / "example.json"
        speech = json.loads(facts_path.read_text()).get("speech") if facts_path.exists() else None
        if not speech:
            continue
        ipus = [(float(s), float(e)) for s, e in speech]
        turn = (ipus[0][0], ipus[-1][1])
        counts, out = onset_counts([start for start, _ in row["backchannels"]], ipus, turn)
        observed.append(counts)
        expected.append(timing.expected_counts(ipus, turn))
        turn_s.append(turn[1] - turn[0])
        examples.append(row["example"])
        outside += out
    if not examples:
        return {"examples": 0, "note": "no example with its speech times (example.json 'speech')"}
    observed, expected, turn_s = np.array(observed), np.array(expected), np.array(turn_s)
    n = len(examples)
    floor = listener_jsd(expected.sum(axis=0), int(observed.sum()))
    return {"examples": n, "backchannels": int(observed.sum()), "outside": outside,
            "rate_per_s": float(observed.sum() / turn_s.sum()),
            "switchboard_rate_per_s": float(expected.sum() / turn_s.sum()),
            "rate_ratio": float(observed.sum() / expected.sum()),
            "rate_ratio_ci95": _as_list(ratio_of_sums_interval(observed.sum(axis=1), expected.sum(axis=1))),
            "timing_jsd": timing_jsd(observed.sum(axis=0), expected.sum(axis=0)),
            "timing_jsd_ci95": _as_list(cluster_bootstrap_interval(_pooled_jsd(observed, expected), n))
            if observed.sum() else None,
            "listener_timing_jsd": None if floor is None else floor[0],
            "listener_timing_jsd_ci90": None if floor is None else [floor[1], floor[2]],
            "bins": bin_labels(), "observed": observed.sum(axis=0).astype(int).tolist(),
            "expected": [round(float(x), 4) for x in expected.sum(axis=0)],
            "reference": f"{timing.source} ({timing.conversations} conversations)"}

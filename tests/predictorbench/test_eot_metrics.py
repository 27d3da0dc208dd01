"""eot-bench policy metrics on a small prediction table worked out by hand.

Spans (first threshold crossing, p_eot per 0.1 s of silence):
  hold a/0  0.4 s  [0.1, 0.6, 0.2, 0.2]
  hold b/0  0.8 s  [0.1] * 8
  hold c/0  0.15 s [0.9]               -> dropped (hold spans must last 0.2-5.0 s)
  eot  a/1  1.2 s  [0.2, 0.4, 0.7, 0.9 ...]
  eot  b/1  0.6 s  [0.6] * 6
Threshold 0.5: the model fires on a/0 at 0.2, never on b/0, on a/1 at 0.3 and b/1 at 0.1; with an
action delay of 0.3 only a/1 and b/1 fire, both at 0.3. Then with timeout T, f = min(fire, T):
  delay 0.0, T 0.5: cutoffs a/0 (0.2 <= 0.4), b/0 (0.5 <= 0.8) -> 1.0; latency (0.3 + 0.1) / 2 = 0.2
  delay 0.0, T 1.0: a/0 only -> 0.5; latency 0.2
  delay 0.3, T 0.5: b/0 only -> 0.5; latency 0.3
  delay 0.3, T 1.0: none -> 0.0; latency 0.3
Threshold 0.95 (never reached): T 0.5 -> cutoff 0.5 (b/0), latency 0.5; T 1.0 -> 0.0, latency 1.0.
"""

import numpy as np
import pandas as pd
import pytest

from predictorbench.eot.metrics import (MetricsError, SweepParams, auc_ap, compute_metrics, operating_points,
                               pareto_frontier, span_scores, sweep, vad_baseline)


def table(spans):
    rows = []
    for (rid, idx, label), scores in spans.items():
        for k, p in enumerate(scores, start=1):
            rows.append({"id": rid, "language": "en", "span_index": idx, "timestamp": 10 * idx + 0.1 * k,
                         "silence_dur": round(0.1 * k, 6), "p_eot": p, "label": label})
    return pd.DataFrame(rows)


PREDICTIONS = table({
    ("a", 0, "hold"): [0.1, 0.6, 0.2, 0.2],
    ("b", 0, "hold"): [0.1] * 8,
    ("c", 0, "hold"): [0.9],
    ("a", 1, "eot"): [0.2, 0.4, 0.7] + [0.9] * 9,
    ("b", 1, "eot"): [0.6] * 6,
})
PARAMS = SweepParams(thresholds=(0.5, 0.95), action_delays=(0.0, 0.3), timeouts=(0.5, 1.0),
                     vad_timeouts=(0.3, 0.5, 0.9))


def policy(t, threshold, delay, timeout):
    row = t[(t.threshold == threshold) & (t.action_delay == delay) & (t.timeout == timeout)]
    assert len(row) == 1
    return round(float(row.cutoff_rate.iloc[0]), 9), round(float(row.mean_latency.iloc[0]), 9)


def test_sweep_by_hand():
    spans = span_scores(PREDICTIONS, PARAMS)
    assert spans.dropped_hold == 1 and spans.keys == [("a", 0), ("a", 1), ("b", 0), ("b", 1)]
    t = sweep(spans, PARAMS)
    assert len(t) == 8 and set(t.n_hold) == {2} and set(t.n_eot) == {2}
    assert policy(t, 0.5, 0.0, 0.5) == (1.0, 0.2)
    assert policy(t, 0.5, 0.0, 1.0) == (0.5, 0.2)
    assert policy(t, 0.5, 0.3, 0.5) == (0.5, 0.3)
    assert policy(t, 0.5, 0.3, 1.0) == (0.0, 0.3)
    assert policy(t, 0.95, 0.0, 0.5) == (0.5, 0.5)
    assert policy(t, 0.95, 0.3, 1.0) == (0.0, 1.0)


def test_pareto_budgets_and_vad_baseline_by_hand():
    tradeoff, summary = compute_metrics(PREDICTIONS, PARAMS)
    assert [(p["mean_latency"], p["cutoff_rate"], p["threshold"], p["action_delay"], p["timeout"])
            for p in summary["pareto"]] == [(pytest.approx(0.2), 0.5, 0.5, 0.0, 1.0), (pytest.approx(0.3), 0.0, 0.5, 0.3, 1.0)]
    assert summary["cutoff_at_300ms"] == 0.0 and summary["cutoff_at_600ms"] == 0.0
    assert summary["latency_at_5pct"] == pytest.approx(0.3) and summary["latency_at_10pct"] == pytest.approx(0.3)
    assert summary["operating_points"]["latency_at_5pct"]["action_delay"] == 0.3
    # VAD baseline: hold spans of 0.4 and 0.8 s; timeout T cuts those at least T long.
    vad = summary["vad_baseline"]
    assert vad["cutoff_at_300ms"] == 1.0 and vad["cutoff_at_600ms"] == 0.5
    assert vad["latency_at_5pct"] == pytest.approx(0.9) and vad["latency_at_10pct"] == pytest.approx(0.9)
    assert set(tradeoff.policy) == {"model", "vad_baseline"} and len(tradeoff) == 8 + 3
    assert summary["n_hold_spans"] == 2 and summary["n_eot_spans"] == 2 and summary["n_hold_spans_dropped"] == 1


def test_budget_out_of_reach_and_pareto_ties():
    t = pd.DataFrame({"threshold": [0.1, 0.2, 0.3, 0.4], "action_delay": 0.0, "timeout": 1.0,
                      "cutoff_rate": [0.5, 0.5, 0.2, 0.3], "mean_latency": [0.4, 0.4, 0.7, 0.9]})
    points = operating_points(t)
    assert points["cutoff_at_300ms"] is None  # no policy answers within 0.3 s on average
    assert points["cutoff_at_600ms"]["cutoff_rate"] == 0.5 and points["cutoff_at_600ms"]["threshold"] == 0.1
    assert points["latency_at_5pct"] is None and points["latency_at_10pct"] is None
    assert [(p["threshold"], p["cutoff_rate"]) for p in pareto_frontier(t)] == [(0.1, 0.5), (0.3, 0.2)]


def test_score_point_takes_one_score_per_span():
    params = SweepParams(thresholds=(0.5,), action_delays=(0.0, 0.3), timeouts=(0.5, 1.0), score_point=0.2)
    t = sweep(span_scores(PREDICTIONS, params), params)
    # scores at 0.2 s: a/0 0.6, b/0 0.1, a/1 0.4, b/1 0.6; fire at max(0.2, delay) where >= 0.5.
    assert policy(t, 0.5, 0.0, 0.5) == (1.0, 0.35)
    assert policy(t, 0.5, 0.0, 1.0) == (0.5, 0.6)
    assert policy(t, 0.5, 0.3, 0.5) == (1.0, 0.4)
    with pytest.raises(MetricsError, match="score point 0.25 s is not on the prediction grid"):
        span_scores(PREDICTIONS, SweepParams(score_point=0.25))


def test_span_set_durations_replace_the_last_grid_point():
    # a/0 really lasted 0.45 s: a 0.45 s timeout then still cuts it off (fire time <= duration).
    durations = {("a", 0): 0.45, ("b", 0): 0.8, ("c", 0): 0.15, ("a", 1): 1.2, ("b", 1): 0.6}
    spans = span_scores(PREDICTIONS, PARAMS, durations)
    vad = vad_baseline(spans, [0.45, 0.46])
    assert list(vad.cutoffs) == [2, 1]


def test_scalar_diagnostics_by_hand():
    # span maxima: holds 0.6, 0.1; eots 0.9, 0.6 -> AUC (1 + 1 + 0.5 + 1) / 4; AP 0.5 * 1 + 0.5 * 2/3
    auc, ap = auc_ap(np.array([0.6, 0.1, 0.9, 0.6]), np.array([False, False, True, True]))
    assert auc == pytest.approx(0.875) and ap == pytest.approx(0.5 + 1 / 3)
    _, summary = compute_metrics(PREDICTIONS, PARAMS)
    assert summary["diagnostics"] == {"auc": pytest.approx(0.875), "ap": pytest.approx(0.5 + 1 / 3)}


def test_bad_tables_are_named():
    with pytest.raises(MetricsError, match="lack column"):
        compute_metrics(PREDICTIONS.drop(columns=["p_eot"]), PARAMS)
    with pytest.raises(MetricsError, match="unknown label"):
        compute_metrics(PREDICTIONS.assign(label="end"), PARAMS)
    with pytest.raises(MetricsError, match="no eot spans"):
        compute_metrics(PREDICTIONS[PREDICTIONS.label == "hold"], PARAMS)

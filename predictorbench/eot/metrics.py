"""eot-bench policy metrics: the threshold x action_delay x timeout sweep, its Pareto frontier and
the four budget numbers, plus the scalar diagnostics (AUC, AP) that do not rank models.

Spans: predictions are grouped by (id, span_index). A span's duration comes from the span set
(span_set.parquet) when given, else from its last grid point (max silence_dur, which can be up to
one inference interval short). Hold spans outside [min_hold, max_hold] (0.2-5.0 s) are dropped;
eot spans are all kept and must have at least one prediction row.

Policy (threshold, action_delay, timeout) on one span, times in seconds of silence:
  model fire time  c = the first grid point s >= action_delay with p_eot(s) >= threshold;
                   with a score point sp: c = max(sp, action_delay) if p_eot(sp) >= threshold
                   (the score is taken once, at sp; a span shorter than sp has no score);
                   c = infinity when the model never fires.
  fire time        f = min(c, timeout).
  hold span        a false cutoff iff f <= its duration (the agent speaks before the user resumes).
  eot span         latency = f (silence starts when the user's turn ends).
  false-cutoff rate = cutoffs / hold spans; mean latency = mean over eot spans.
VAD baseline: timeout only (no model), on a fine 10 ms grid of timeouts: cutoff rate = share of
hold spans at least `timeout` long, latency = timeout.
Budget numbers: best (lowest) cutoff rate among policies with mean latency <= 0.3 s / 0.6 s; best
mean latency among policies with cutoff rate <= 5% / 10%; None when no policy meets the budget.
Pareto frontier: the policies no other policy beats on both (lower-left), sorted by latency.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd

from predictorbench.eot.predictors import PREDICTION_COLUMNS

# sklearn.metrics is imported where it is used: it takes about a second, which most commands never need.

EPS = 1e-6
LATENCY_BUDGETS = {"cutoff_at_300ms": 0.3, "cutoff_at_600ms": 0.6}
CUTOFF_BUDGETS = {"latency_at_5pct": 0.05, "latency_at_10pct": 0.10}


class MetricsError(ValueError):
    """Predictions that cannot be scored; the message names the problem."""


def _grid(start: float, stop: float, step: float) -> tuple[float, ...]:
    return tuple(float(x) for x in np.round(np.arange(start, stop + step / 2, step), 6))


@dataclass(frozen=True)
class SweepParams:
    thresholds: tuple[float, ...] = _grid(0.0, 1.0, 0.05)
    action_delays: tuple[float, ...] = _grid(0.0, 2.0, 0.1)
    timeouts: tuple[float, ...] = _grid(0.1, 5.0, 0.1)
    vad_timeouts: tuple[float, ...] = _grid(0.01, 5.0, 0.01)
    min_hold_span_duration: float = 0.2
    max_hold_span_duration: float = 5.0
    score_point: float | None = None

    def as_dict(self) -> dict:
        d = asdict(self)
        for k in ("thresholds", "action_delays", "timeouts", "vad_timeouts"):
            v = d.pop(k)
            d[k] = {"min": min(v), "max": max(v), "n": len(v)} if len(v) > 3 else list(v)
        return d


@dataclass
class SpanScores:
    """Spans that survive the filters, as padded arrays (n spans x G grid points)."""

    keys: list[tuple[str, int]]
    is_eot: np.ndarray  # (n,) bool
    duration: np.ndarray  # (n,)
    times: np.ndarray  # (n, G) silence_dur, inf where padded
    scores: np.ndarray  # (n, G) p_eot, -inf where padded
    dropped_hold: int = 0
    extra: dict = field(default_factory=dict)


def check_predictions(df: pd.DataFrame) -> pd.DataFrame:
    missing = [c for c in PREDICTION_COLUMNS if c not in df.columns and c != "language"]
    if missing:
        raise MetricsError(f"predictions lack column(s) {', '.join(missing)} "
                           f"(eot-bench needs {', '.join(PREDICTION_COLUMNS)})")
    bad = set(df["label"].unique()) - {"eot", "hold"}
    if bad:
        raise MetricsError(f"unknown label(s) {sorted(bad)}: use 'eot' or 'hold'")
    if df["p_eot"].isna().any():
        raise MetricsError(f"{int(df['p_eot'].isna().sum())} prediction row(s) have no p_eot")
    return df


def span_scores(predictions: pd.DataFrame, params: SweepParams = SweepParams(),
                span_durations: dict | None = None) -> SpanScores:
    df = check_predictions(predictions).sort_values(["id", "span_index", "silence_dur"])
    keys, eot, durations, tracks = [], [], [], []
    dropped = 0
    for (rid, idx), g in df.groupby(["id", "span_index"], sort=True):
        labels = g["label"].unique()
        if len(labels) != 1:
            raise MetricsError(f"span ({rid}, {idx}) has both eot and hold rows")
        is_eot = labels[0] == "eot"
        times, scores = g["silence_dur"].to_numpy(float), g["p_eot"].to_numpy(float)
        duration = float(span_durations[(rid, int(idx))]) if span_durations and (rid, int(idx)) in span_durations \
            else float(times.max())
        if not is_eot and not (params.min_hold_span_duration - EPS <= duration <= params.max_hold_span_duration + EPS):
            dropped += 1
            continue
        if params.score_point is not None:
            at = np.flatnonzero(np.abs(times - params.score_point) < EPS)
            if len(at) == 0 and duration >= params.score_point + EPS and times.max() >= params.score_point - EPS:
                raise MetricsError(f"score point {params.score_point} s is not on the prediction grid of span "
                                   f"({rid}, {idx}); use a score point on the grid (e.g. 0.2 with a 0.1 s interval)")
            times, scores = times[at], scores[at]
        keys.append((str(rid), int(idx)))
        eot.append(is_eot)
        durations.append(duration)
        tracks.append((times, scores))
    n_eot = int(np.sum(eot))
    if n_eot == 0:
        raise MetricsError("no eot spans in the predictions: latency cannot be measured")
    width = max(1, max(len(t) for t, _ in tracks))
    times = np.full((len(tracks), width), np.inf)
    scores = np.full((len(tracks), width), -np.inf)
    for k, (t, s) in enumerate(tracks):
        times[k, : len(t)] = t
        scores[k, : len(s)] = s
    return SpanScores(keys, np.array(eot, dtype=bool), np.array(durations), times, scores, dropped)


def model_fire_times(spans: SpanScores, threshold: float, action_delays, score_point: float | None) -> np.ndarray:
    """(len(action_delays), n) time at which the model alone fires; inf where it never does."""
    hit = spans.scores >= threshold - EPS
    out = np.full((len(action_delays), len(spans.is_eot)), np.inf)
    for j, delay in enumerate(action_delays):
        if score_point is not None:
            fired = hit[:, 0] & np.isfinite(spans.times[:, 0])
            out[j] = np.where(fired, max(score_point, delay), np.inf)
            continue
        ok = hit & (spans.times >= delay - EPS)
        first = np.argmax(ok, axis=1)
        out[j] = np.where(ok.any(axis=1), spans.times[np.arange(len(first)), first], np.inf)
    return out


def sweep(spans: SpanScores, params: SweepParams = SweepParams()) -> pd.DataFrame:
    """One row per policy: threshold, action_delay, timeout, cutoff_rate, mean_latency, counts."""
    hold, eot = ~spans.is_eot, spans.is_eot
    n_hold, n_eot = int(hold.sum()), int(eot.sum())
    timeouts = np.asarray(params.timeouts, dtype=float)
    parts = []
    for threshold in params.thresholds:
        model = model_fire_times(spans, threshold, params.action_delays, params.score_point)  # (D, n)
        fire = np.minimum(model[:, None, :], timeouts[None, :, None])  # (D, T, n)
        cut = (fire[:, :, hold] <= spans.duration[hold] + EPS).sum(axis=2)
        lat = fire[:, :, eot].mean(axis=2)
        d_idx, t_idx = np.meshgrid(np.arange(len(params.action_delays)), np.arange(len(timeouts)), indexing="ij")
        parts.append(pd.DataFrame({
            "threshold": threshold,
            "action_delay": np.asarray(params.action_delays)[d_idx.ravel()],
            "timeout": timeouts[t_idx.ravel()],
            "cutoffs": cut.ravel(),
            "cutoff_rate": cut.ravel() / n_hold if n_hold else np.zeros(cut.size),
            "mean_latency": lat.ravel(),
        }))
    table = pd.concat(parts, ignore_index=True)
    table["n_hold"], table["n_eot"] = n_hold, n_eot
    return table


def vad_baseline(spans: SpanScores, timeouts) -> pd.DataFrame:
    hold = spans.duration[~spans.is_eot]
    t = np.asarray(timeouts, dtype=float)
    cut = (t[:, None] <= hold[None, :] + EPS).sum(axis=1)
    return pd.DataFrame({"threshold": np.nan, "action_delay": 0.0, "timeout": t, "cutoffs": cut,
                         "cutoff_rate": cut / len(hold) if len(hold) else np.zeros(len(t)), "mean_latency": t,
                         "n_hold": len(hold), "n_eot": int(spans.is_eot.sum())})


def _policy(row) -> dict:
    th = row["threshold"]
    # rounded to the microsecond / 1e-6: float sums of 0.1 s steps otherwise print as 1.3472999999
    return {"threshold": None if pd.isna(th) else float(th), "action_delay": float(row["action_delay"]),
            "timeout": float(row["timeout"]), "cutoff_rate": round(float(row["cutoff_rate"]), 6),
            "mean_latency": round(float(row["mean_latency"]), 6)}


def operating_points(table: pd.DataFrame) -> dict:
    """The four budget numbers with the policy that reaches each (None where no policy does)."""
    out = {}
    order = ["threshold", "action_delay", "timeout"]
    for name, budget in LATENCY_BUDGETS.items():
        ok = table[table["mean_latency"] <= budget + EPS]
        out[name] = None if ok.empty else _policy(ok.sort_values(["cutoff_rate", "mean_latency", *order]).iloc[0])
    for name, budget in CUTOFF_BUDGETS.items():
        ok = table[table["cutoff_rate"] <= budget + EPS]
        out[name] = None if ok.empty else _policy(ok.sort_values(["mean_latency", "cutoff_rate", *order]).iloc[0])
    return out


def budget_values(points: dict) -> dict:
    """{cutoff_at_300ms: rate, ..., latency_at_5pct: seconds, ...} from `operating_points`."""
    return {name: (None if p is None else (p["cutoff_rate"] if name.startswith("cutoff") else p["mean_latency"]))
            for name, p in points.items()}


def pareto_frontier(table: pd.DataFrame) -> list[dict]:
    """Policies not beaten on both latency and cutoff rate, by increasing latency (ties: first kept)."""
    ordered = table.sort_values(["mean_latency", "cutoff_rate", "threshold", "action_delay", "timeout"],
                                na_position="first")
    frontier, best = [], np.inf
    for _, row in ordered.iterrows():
        if row["cutoff_rate"] < best - EPS:
            frontier.append(_policy(row))
            best = row["cutoff_rate"]
    return frontier


def auc_ap(scores: np.ndarray, positive: np.ndarray) -> tuple[float | None, float | None]:
    """ROC-AUC (ties count half) and average precision (step-wise over thresholds, ties grouped),
    both by scikit-learn; None without both classes."""
    from sklearn.metrics import average_precision_score, roc_auc_score
    scores, positive = np.asarray(scores, float), np.asarray(positive, bool)
    if positive.all() or not positive.any():
        return None, None
    return float(roc_auc_score(positive, scores)), float(average_precision_score(positive, scores))


def span_level_scores(spans: SpanScores) -> np.ndarray:
    """One score per span: the score at the score point, else the span's max (-inf without any)."""
    return spans.scores.max(axis=1)


def compute_metrics(predictions: pd.DataFrame, params: SweepParams = SweepParams(),
                    span_durations: dict | None = None) -> tuple[pd.DataFrame, dict]:
    """(tradeoff table of every policy, summary) of one model run."""
    spans = span_scores(predictions, params, span_durations)
    table = sweep(spans, params)
    table.insert(0, "policy", "model")
    vad = vad_baseline(spans, params.vad_timeouts)
    vad.insert(0, "policy", "vad_baseline")
    points, vad_points = operating_points(table), operating_points(vad)
    scores = span_level_scores(spans)
    finite = np.isfinite(scores)
    auc, ap = auc_ap(scores[finite], spans.is_eot[finite])
    summary = {
        **budget_values(points),
        "pareto": pareto_frontier(table),
        "operating_points": points,
        "vad_baseline": {**budget_values(vad_points), "operating_points": vad_points},
        "diagnostics": {"auc": auc, "ap": ap},
        "n_hold_spans": int((~spans.is_eot).sum()),
        "n_eot_spans": int(spans.is_eot.sum()),
        "n_hold_spans_dropped": spans.dropped_hold,
        "span_durations": "span set" if span_durations else "last grid point",
        "params": params.as_dict(),
    }
    return pd.concat([table, vad], ignore_index=True), summary

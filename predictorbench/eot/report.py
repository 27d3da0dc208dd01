"""Comparison of the model runs of one language folder (eot-bench's compare-models), with Plotly.

Reads each run's metrics/summary.json and metrics/tradeoff.parquet (it does not recompute
metrics), checks that all runs used the same hold-span filter, orders models by best mean latency
at the 5% false-cutoff budget, and writes into <language>/comparison/:

  report.md                                       Pareto frontier first, then the budget tables
  pareto_frontier.html                            (VAD baseline included; best value in bold)
  cutoff_rate_at_latency_budget_300_600ms.html
  latency_at_cutoff_budget_5_10pct.html
  plotly.min.js                                   shared by the three figures (works offline)
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go

from predictorbench.eot.runs import RunError, model_runs, read_manifest
from turntaking.jsonfiles import read_json

BUDGETS = (("cutoff_at_300ms", "Best cutoff rate @ 0.3s latency"),
           ("cutoff_at_600ms", "Best cutoff rate @ 0.6s latency"),
           ("latency_at_5pct", "Best mean latency @ 5% cutoff"),
           ("latency_at_10pct", "Best mean latency @ 10% cutoff"))
VAD_NAME = "VAD baseline"


def load_runs(lang_dir, min_hold: float | None = None, max_hold: float | None = None) -> list[dict]:
    runs = []
    for run_dir in model_runs(lang_dir):
        summary = read_json(run_dir / "metrics" / "summary.json", "metrics summary", RunError)
        manifest = read_manifest(run_dir)
        params = summary.get("params", {})
        for key, want in (("min_hold_span_duration", min_hold), ("max_hold_span_duration", max_hold)):
            if want is not None and abs(params.get(key, want) - want) > 1e-9:
                raise RunError(f"{run_dir}: metrics used {key}={params.get(key)}, not {want}; recompute them")
        runs.append({"name": manifest.get("display_name") or run_dir.name, "dir": run_dir, "summary": summary,
                     "tradeoff": pd.read_parquet(run_dir / "metrics" / "tradeoff.parquet")})
    if not runs:
        raise RunError(f"{lang_dir}: no model runs with metrics (run `python -m predictorbench eot metrics` first)")
    settings = {(r["summary"]["params"]["min_hold_span_duration"], r["summary"]["params"]["max_hold_span_duration"])
                for r in runs}
    if len(settings) > 1:
        raise RunError(f"{lang_dir}: model runs used different hold-span filters {sorted(settings)}")
    runs.sort(key=lambda r: (r["summary"]["latency_at_5pct"] is None, r["summary"]["latency_at_5pct"] or 0, r["name"]))
    return runs


def _fmt(name: str, v) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    return f"{100 * v:.1f}%" if name.startswith("cutoff") else f"{1000 * v:.0f} ms"


def table_rows(runs: list[dict]) -> list[dict]:
    """One row per model plus the VAD baseline (from the first run's span set)."""
    rows = [{"model": r["name"], **{k: r["summary"][k] for k, _ in BUDGETS}} for r in runs]
    rows.append({"model": VAD_NAME, **{k: runs[0]["summary"]["vad_baseline"][k] for k, _ in BUDGETS}})
    return rows


def markdown_table(rows: list[dict], keys) -> str:
    best = {k: min((r[k] for r in rows if r[k] is not None), default=None) for k in keys}
    lines = ["| Model | " + " | ".join(dict(BUDGETS)[k] for k in keys) + " |",
             "|---|" + "---|" * len(keys)]
    for r in rows:
        cells = []
        for k in keys:
            text = _fmt(k, r[k])
            cells.append(f"**{text}**" if r[k] is not None and best[k] is not None and abs(r[k] - best[k]) < 1e-12 else text)
        lines.append(f"| {r['model']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def pareto_figure(runs: list[dict]) -> go.Figure:
    fig = go.Figure()
    for r in runs:
        p = r["summary"]["pareto"]
        fig.add_trace(go.Scatter(x=[1000 * q["mean_latency"] for q in p], y=[100 * q["cutoff_rate"] for q in p],
                                 mode="lines+markers", name=r["name"], line_shape="hv"))
    vad = runs[0]["tradeoff"]
    vad = vad[vad["policy"] == "vad_baseline"].sort_values("mean_latency")
    fig.add_trace(go.Scatter(x=1000 * vad["mean_latency"], y=100 * vad["cutoff_rate"], mode="lines",
                             name=VAD_NAME, line={"dash": "dash", "color": "gray"}))
    fig.update_layout(title="Latency / false-cutoff Pareto frontier (lower left is better)",
                      xaxis_title="mean latency after the true end of turn (ms)",
                      yaxis_title="false cutoffs (% of mid-turn pauses)", template="plotly_white")
    return fig


def bar_figure(rows: list[dict], keys, title: str, scale: float, unit: str) -> go.Figure:
    fig = go.Figure()
    for k in keys:
        fig.add_trace(go.Bar(x=[r["model"] for r in rows], y=[None if r[k] is None else scale * r[k] for r in rows],
                             name=dict(BUDGETS)[k]))
    fig.update_layout(title=title, yaxis_title=unit, barmode="group", template="plotly_white")
    return fig


def compare(lang_dir, min_hold: float | None = 0.2, max_hold: float | None = 5.0) -> Path:
    """Write the comparison report of a language folder; returns the report.md path."""
    lang_dir = Path(lang_dir)
    runs = load_runs(lang_dir, min_hold, max_hold)
    rows = table_rows(runs)
    out = lang_dir / "comparison"
    out.mkdir(exist_ok=True)
    for stale in list(out.glob("*.parquet")) + list(out.glob("*.json")):
        stale.unlink()
    cut_keys, lat_keys = ("cutoff_at_300ms", "cutoff_at_600ms"), ("latency_at_5pct", "latency_at_10pct")
    figures = {
        "pareto_frontier.html": pareto_figure(runs),
        "cutoff_rate_at_latency_budget_300_600ms.html": bar_figure(
            rows, cut_keys, "Best false-cutoff rate at 0.3 s and 0.6 s latency budgets", 100, "false cutoffs (%)"),
        "latency_at_cutoff_budget_5_10pct.html": bar_figure(
            rows, lat_keys, "Best mean latency at 5% and 10% false-cutoff budgets", 1000, "mean latency (ms)"),
    }
    for name, fig in figures.items():
        fig.write_html(out / name, include_plotlyjs="directory")
    report = [
        f"# End-of-turn comparison: {lang_dir.parent.name} / {lang_dir.name}", "",
        f"{len(runs)} model run(s); hold spans {runs[0]['summary']['params']['min_hold_span_duration']}-"
        f"{runs[0]['summary']['params']['max_hold_span_duration']} s; "
        f"{runs[0]['summary']['n_hold_spans']} hold and {runs[0]['summary']['n_eot_spans']} eot spans.", "",
        "## Pareto frontier", "", "[pareto_frontier.html](pareto_frontier.html)", "",
        "## Best cutoff rate at 0.3 s and 0.6 s latency budgets", "",
        "[cutoff_rate_at_latency_budget_300_600ms.html](cutoff_rate_at_latency_budget_300_600ms.html)", "",
        markdown_table(rows, cut_keys), "",
        "## Best mean latency at 5% and 10% false-cutoff budgets", "",
        "[latency_at_cutoff_budget_5_10pct.html](latency_at_cutoff_budget_5_10pct.html)", "",
        markdown_table(rows, lat_keys), "",
        "## All operating points", "", markdown_table(rows, [k for k, _ in BUDGETS]), "",
        "— : no policy setting reached that budget. Models are ordered by best mean latency at 5% cutoff.",
    ]
    path = out / "report.md"
    path.write_text("\n".join(report) + "\n")
    return path

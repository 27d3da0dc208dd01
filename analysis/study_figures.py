"""Plotly figures of the researcher views. They only draw tables made in `analysis.study_metrics`
(and `analysis.session_view`); they compute nothing.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.colors import qualitative
from plotly.subplots import make_subplots

from analysis.figures import EVENT_LABELS, reference_marker
from analysis.references import REFERENCE_COLORS, WORD_REFERENCE
from judge.labels import LABEL_MEANINGS
from turntaking.intervals import interval_label
from turntaking.stats import DURATION_EVENTS

REFERENCE_COLOR = "#9e9e9e"


def series_color(name: str, names: list[str]) -> str:
    """The same colour for a system in every figure (greys for the human references)."""
    if name in REFERENCE_COLORS:
        return REFERENCE_COLORS[name]
    if name == "human reference":
        return REFERENCE_COLOR
    others = [n for n in names if n not in REFERENCE_COLORS and n != "human reference"]
    return qualitative.Plotly[others.index(name) % len(qualitative.Plotly)] if name in others else None


def system_statistics_figure(system_stats: dict[str, dict], references: dict[str, dict | None] | None) -> go.Figure:
    """Fig. 2: events per minute and % of time, the Switchboard references ({label: table}; None:
    not shown) next to each system; the error bars are 95 % intervals of the pooled value by a
    bootstrap over the system's sessions (inside the measure's range; none with one session), the
    sessions' sd is in the hover."""
    shown = {name: table for name, table in (references or {}).items() if table}
    names = [*shown, *system_stats]
    fig = make_subplots(rows=1, cols=2, subplot_titles=("Events per minute", "% of conversation duration"))
    labels = [EVENT_LABELS[e] for e in DURATION_EVENTS]
    for name, stats in (shown | system_stats).items():
        for col, key in ((1, "per_minute"), (2, "percent")):
            values = [stats[key][e] for e in DURATION_EVENTS]
            bars, custom, hover = None, None, "%{y:.2f}<extra>" + name + "</extra>"
            if name not in shown:
                intervals = [stats["intervals_95"][key][e] or (float("nan"),) * 2 for e in DURATION_EVENTS]
                bars = dict(type="data", symmetric=False, array=[hi - v for (_, hi), v in zip(intervals, values)],
                            arrayminus=[v - lo for (lo, _), v in zip(intervals, values)])
                sds = [stats["per_conversation"][key][e]["std"] for e in DURATION_EVENTS]
                label = interval_label(stats["intervals_95"]["sessions"])
                hover = ("%{y:.2f} [%{customdata[0]:.2f}, %{customdata[1]:.2f}] (" + label
                         + ")<br>session sd %{customdata[2]:.2f}<extra>" + name + "</extra>")
                custom = [(lo, hi, sd) for (lo, hi), sd in zip(intervals, sds)]
            fig.add_trace(go.Bar(x=labels, y=values, name=name, legendgroup=name, showlegend=col == 1,
                                 marker=reference_marker(name, series_color(name, names)), error_y=bars,
                                 hovertemplate=hover, customdata=custom),
                          row=1, col=col)
    fig.update_layout(barmode="group", height=400, margin=dict(l=40, r=20, t=70, b=40),
                      title=dict(text="Error bars: 95 % CI of the pooled value over the system's sessions "
                                      "(sd in the hover)", font=dict(size=13)))
    return fig


def floor_transfer_figure(histogram: pd.DataFrame, summary: pd.DataFrame) -> go.Figure:
    """The floor-transfer-offset distribution of each series (% of its transfers per 50 ms bin),
    the Switchboard references in greys (the word-alignment one dashed); the legend gives each
    series' median and count."""
    names = list(dict.fromkeys(histogram["series"]))
    medians = summary.set_index("series")
    fig = go.Figure()
    for name, group in histogram.groupby("series", sort=False):
        row = medians.loc[name]
        n = int(row["floor transfers"])
        label = f"{name} (median {int(row['p50 ms'])} ms, n={n})" if n else f"{name} (no floor transfers)"
        fig.add_trace(go.Scatter(x=group["offset_s"], y=group["percent"], name=label, mode="lines",
                                 line=dict(shape="hvh", color=series_color(name, names),
                                           width=3 if name in REFERENCE_COLORS else 2,
                                           dash="dash" if name == WORD_REFERENCE else "solid")))
    fig.add_vline(x=0, line_dash="dot", line_color="black", annotation_text="overlap | gap",
                  annotation_position="top")
    fig.update_layout(height=380, margin=dict(l=40, r=20, t=60, b=40), xaxis_title="floor-transfer offset (s)",
                      yaxis_title="% of floor transfers per 50 ms",
                      title="Floor-transfer offsets: next turn's start minus the previous turn's end")
    return fig


def session_spread_figure(sessions: pd.DataFrame) -> go.Figure:
    """Per-session spread of the four event rates, one box per system."""
    measures = ["ipu /min", "pause /min", "gap /min", "overlap /min"]
    fig = make_subplots(rows=1, cols=len(measures), subplot_titles=measures)
    names = list(dict.fromkeys(sessions["system"]))
    for i, measure in enumerate(measures, 1):
        for system, group in sessions.groupby("system", sort=False):
            fig.add_trace(go.Box(y=group[measure], name=system, legendgroup=system, showlegend=i == 1,
                                 boxpoints="all", jitter=0.4, marker_color=series_color(system, names)),
                          row=1, col=i)
    fig.update_layout(height=340, margin=dict(l=40, r=20, t=50, b=40), title="Per-session spread")
    return fig


def agreement_figure(table: pd.DataFrame) -> go.Figure:
    """Fig. 3: agreement with the judge per decision, per series; error bars are the 95 % intervals
    over sessions (conversations for the human reference), none where there is no interval."""
    metrics = list(dict.fromkeys(table["metric"]))
    names = list(dict.fromkeys(table["series"]))
    fig = make_subplots(rows=1, cols=max(len(metrics), 1), subplot_titles=metrics)
    for i, metric in enumerate(metrics, 1):
        part = table[table["metric"] == metric]
        for series, group in part.groupby("series", sort=False):
            y = group["agreement_percent"].astype(float)
            low, high = group["ci_low_percent"].astype(float), group["ci_high_percent"].astype(float)
            fig.add_trace(go.Bar(
                x=group["decision"], y=y, name=series, legendgroup=series, showlegend=i == 1,
                marker_color=series_color(series, names),
                customdata=list(zip(group["instances"], group["interval"])),
                hovertemplate="%{y:.1f} % of %{customdata[0]} instances<br>%{customdata[1]}",
                # NaN (no interval: one session) draws no bar.
                error_y=dict(type="data", symmetric=False, array=high - y, arrayminus=y - low)), row=1, col=i)
    fig.update_layout(barmode="group", height=440, margin=dict(l=40, r=20, t=80, b=120),
                      yaxis_title="agreement with judge (%)",
                      title=dict(text="Error bars: 95 % CI over sessions (over conversations for the human "
                                      "reference); none with one session", font=dict(size=13)))
    fig.update_yaxes(range=[0, 100])
    return fig


def confusion_figure(table: pd.DataFrame) -> go.Figure:
    """Fig. 4: one heatmap per system (% of its decisions), side by side. They share the judge's
    labels down the side, drawn once at the left (each heatmap's own would lie on the heatmap before
    it), and one colour scale, so that a colour means the same % in each."""
    systems = list(dict.fromkeys(table["system"]))
    fig = make_subplots(rows=1, cols=max(len(systems), 1), subplot_titles=systems, shared_yaxes=True,
                        horizontal_spacing=0.03)
    labels = list(dict.fromkeys(table["judge_label"]))
    named = [f"{label} {LABEL_MEANINGS.get(label, '')}".strip() for label in labels]  # "T turn change"
    for i, system in enumerate(systems, 1):
        grid = table[table["system"] == system].pivot(index="judge_label", columns="decision_made", values="percent")
        grid = grid.reindex(index=labels, columns=labels)
        fig.add_trace(go.Heatmap(z=grid.to_numpy(), x=named, y=named, coloraxis="coloraxis",
                                 text=grid.round(2).to_numpy(), texttemplate="%{text}",
                                 hovertemplate="judge: %{y}<br>call: %{x}<br>%{z:.2f} % of the decisions<extra></extra>"),
                      row=1, col=i)
        fig.update_xaxes(title_text="what the call did (L<sup>dialogue</sup>)", row=1, col=i)
    fig.update_yaxes(title_text="the judge's label (L<sup>gen</sup>)", row=1, col=1)
    fig.update_yaxes(autorange="reversed")
    fig.update_layout(height=420, margin=dict(l=110, r=20, t=60, b=90),
                      coloraxis=dict(colorscale="Blues", colorbar=dict(title="%")))
    return fig


def naturalness_figure(table: pd.DataFrame, scorer: str, reference: dict | None = None) -> go.Figure:
    """Sessions' naturalness per system; `reference`: human-human conversation of the same length."""
    fig = go.Figure()
    names = list(dict.fromkeys(table["system"]))
    for system, group in table.groupby("system", sort=False):
        fig.add_trace(go.Box(y=group["naturalness"], name=system, boxpoints="all", jitter=0.4,
                             marker_color=series_color(system, names),
                             text=[f"session {s}" for s in group["session_id"]]))
    if reference is not None:
        fig.add_hline(y=reference["mean_naturalness"], line_dash="dash", line_color="grey",
                      annotation_text=reference["system"], annotation_position="bottom right")
    fig.update_layout(height=360, margin=dict(l=40, r=20, t=50, b=40), yaxis_title=f"naturalness ({scorer})",
                      title=f"Naturalness per session ({scorer}; higher is more natural)")
    return fig


def _interval_bars(x, y, low, high, name, color=None) -> go.Bar:
    return go.Bar(x=x, y=y, name=name, marker_color=color,
                  error_y=dict(type="data", symmetric=False, array=high - y, arrayminus=y - low))


def validation_figure(table: pd.DataFrame) -> go.Figure:
    """The study benchmark as bars (TurnNat's measure, this platform's scorer): pairwise accuracy per
    type (95 % intervals over source conversations)."""
    fig = go.Figure(_interval_bars(table["type"], table["pair_accuracy"], table["accuracy_ci_low"],
                                   table["accuracy_ci_high"], "pair accuracy"))
    fig.update_traces(customdata=list(zip(table["pairs"], table["interval"])),
                      hovertemplate="%{y:.3f} of %{customdata[0]} pairs<br>%{customdata[1]}<extra></extra>")
    fig.add_hline(y=0.5, line_dash="dot", annotation_text="chance")
    fig.update_layout(height=360, margin=dict(l=40, r=20, t=50, b=80), yaxis_range=[0, 1],
                      yaxis_title="pairwise accuracy",
                      title="Naturalness scorer on the perturbation benchmark (error bars: 95 % CI over source "
                            "conversations)")
    return fig


def preference_figure(all_types: pd.DataFrame, kept_types: pd.DataFrame) -> go.Figure:
    """Natural-preference rate per type with Wilson intervals, everyone vs after exclusion."""
    fig = go.Figure()
    for name, table, color in (("all annotators", all_types, None), ("after exclusion", kept_types, "#2ca02c")):
        if len(table):
            fig.add_trace(_interval_bars(table["type"], table["natural_preference"], table["ci_low"],
                                         table["ci_high"], name, color))
    fig.add_hline(y=0.5, line_dash="dot", annotation_text="no preference")
    fig.update_layout(barmode="group", height=360, margin=dict(l=40, r=20, t=50, b=80), yaxis_range=[0, 1],
                      yaxis_title="natural preference rate", title="People prefer the natural clip")
    return fig


def rating_scatter(clips: pd.DataFrame) -> go.Figure:
    fig = go.Figure()
    for side, group in clips.groupby("side", sort=False):
        fig.add_trace(go.Scatter(x=group["naturalness"], y=group["mean_rating"], mode="markers", name=f"{side} clips",
                                 text=group["pair_id"]))
    fig.update_layout(height=380, margin=dict(l=40, r=20, t=50, b=40), xaxis_title="naturalness (default scorer)",
                      yaxis_title="mean naturalness rating (1-5)", title="Naturalness scorer against people's ratings")
    return fig

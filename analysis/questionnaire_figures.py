"""Plotly figures of the questionnaire views. They draw the tables of analysis.questionnaire_views
and compute nothing.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.colors import sample_colorscale

from analysis.study_figures import series_color


def _point_colors(points: int) -> list[str]:
    """One colour per answer point, red (1) through grey to blue (the top)."""
    return sample_colorscale("RdBu", [k / (points - 1) for k in range(points)])


def answers_figure(items: pd.DataFrame) -> go.Figure:
    """Each scale item's answers per system as one stacked bar (% of the calls' answers at each
    point), lowest point on the left."""
    rows = [f"{r.item} | {r.system}" for r in items.itertuples()]
    points = int(items["points"].max())
    colors = _point_colors(points)
    fig = go.Figure()
    for point in range(1, points + 1):
        shares = [100 * r.counts.get(point, 0) / r.answers if r.answers and point <= r.points else 0.0
                  for r in items.itertuples()]
        counts = [r.counts.get(point, 0) for r in items.itertuples()]
        fig.add_trace(go.Bar(y=rows, x=shares, orientation="h", name=str(point), marker_color=colors[point - 1],
                             customdata=counts, hovertemplate="%{y}: %{customdata} answer(s) of " + str(point)
                             + " (%{x:.0f} %)<extra></extra>"))
    fig.update_layout(barmode="stack", height=120 + 24 * len(rows), margin=dict(l=260, r=20, t=60, b=40),
                      xaxis_title="% of the calls' answers", legend_title_text="answer",
                      yaxis=dict(autorange="reversed"),
                      title=dict(text="Answers per item and system (1 = the scale's lowest end)", font=dict(size=13)))
    return fig


def medians_figure(items: pd.DataFrame) -> go.Figure:
    """Each scale item's median per system (of the participants' answers), with its 95 %
    bootstrap interval over participants."""
    names = list(dict.fromkeys(items["system"]))
    fig = go.Figure()
    for system, group in items.groupby("system", sort=False):
        median = group["median"].astype(float)
        low, high = group["median_ci_low"].astype(float), group["median_ci_high"].astype(float)
        fig.add_trace(go.Scatter(x=group["item_label"], y=median, name=system, mode="markers",
                                 marker=dict(size=11, color=series_color(system, names)),
                                 customdata=group["participants"],
                                 hovertemplate="median %{y} over %{customdata} participant(s)",
                                 error_y=dict(type="data", symmetric=False, array=high - median,
                                              arrayminus=median - low)))
    fig.update_layout(scattermode="group", height=440, margin=dict(l=50, r=20, t=60, b=140),
                      yaxis_title="median answer", xaxis_tickangle=-30,
                      title=dict(text="Median per participant, 95 % bootstrap interval over participants "
                                      "(none below 2)", font=dict(size=13)))
    return fig


def ranking_figure(ranking: pd.DataFrame) -> go.Figure:
    """The systems' Bradley-Terry log-strengths with their 95 % intervals, strongest first."""
    names = list(ranking["system"])
    strength = ranking["strength"].astype(float)
    fig = go.Figure(go.Scatter(
        x=ranking["system"], y=strength, mode="markers", marker=dict(size=12, color=[series_color(n, names)
                                                                                      for n in names]),
        error_y=dict(type="data", symmetric=False, array=ranking["ci_high"] - strength,
                     arrayminus=strength - ranking["ci_low"]),
        customdata=ranking["rankings"], hovertemplate="%{x}: %{y:.2f} (%{customdata} rankings)<extra></extra>"))
    fig.add_hline(y=0, line_color="#9e9e9e", line_dash="dot")
    fig.update_layout(height=380, margin=dict(l=60, r=20, t=60, b=60), yaxis_title="log-strength (mean 0)",
                      title=dict(text="Bradley-Terry from the rankings; 95 % interval over participants",
                                 font=dict(size=13)))
    return fig


def order_figure(order: pd.DataFrame) -> go.Figure:
    """Each scale item's median by the call's position (1: the participant's first call)."""
    fig = go.Figure()
    for item, group in order.groupby("item", sort=False):
        median = group["median"].astype(float)
        fig.add_trace(go.Scatter(
            x=group["position"], y=median, name=item, mode="lines+markers",
            error_y=dict(type="data", symmetric=False, array=group["median_ci_high"].astype(float) - median,
                         arrayminus=median - group["median_ci_low"].astype(float)),
            customdata=group["participants"], hovertemplate="call %{x}: median %{y} (%{customdata} participants)"))
    fig.update_layout(height=400, margin=dict(l=50, r=20, t=60, b=50), yaxis_title="median answer",
                      xaxis=dict(title="the call's position among the participant's calls", dtick=1),
                      title=dict(text="Order effects: answers by call position", font=dict(size=13)))
    return fig


def correlation_figure(table: pd.DataFrame) -> go.Figure:
    """Measures (rows) x items (columns): Spearman's rho over sessions, red negative, blue
    positive; each cell says rho and its sessions, '*' where the corrected interval excludes 0."""
    measures = list(dict.fromkeys(table["measure"]))
    items = list(dict.fromkeys(table["item_label"]))
    cell = {(r.measure, r.item_label): r for r in table.itertuples()}
    z, text, hover = [], [], []
    for measure in measures:
        z.append([cell[(measure, i)].rho if (measure, i) in cell else None for i in items])
        text.append([(f"{cell[(measure, i)].rho:.2f}{'*' if cell[(measure, i)].distinguishable else ''}"
                      f"<br>n={cell[(measure, i)].sessions}") if (measure, i) in cell else "" for i in items])
        hover.append([cell[(measure, i)].reading if (measure, i) in cell else "" for i in items])
    fig = go.Figure(go.Heatmap(z=z, x=items, y=measures, zmin=-1, zmax=1, zmid=0, colorscale="RdBu",
                               text=text, texttemplate="%{text}", customdata=hover,
                               hovertemplate="%{y} x %{x}: rho %{z:.2f}<br>%{customdata}<extra></extra>",
                               colorbar=dict(title="rho")))
    fig.update_layout(height=160 + 34 * len(measures), margin=dict(l=300, r=20, t=60, b=140), xaxis_tickangle=-30,
                      yaxis=dict(autorange="reversed"),
                      title=dict(text="Spearman's rho over sessions; * = distinguishable from 0 after the "
                                      "correction; n = sessions", font=dict(size=13)))
    return fig

"""Plotly figures of turn-taking statistics (Talking Turns Fig. 2 style)."""

from __future__ import annotations

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from analysis.references import REFERENCE_COLORS, WORD_REFERENCE
from turntaking.stats import DURATION_EVENTS

# Pause and gap leave out the silences next to backchannels; the "all IPUs" ones are Talking Turns'.
EVENT_LABELS = {"ipu": "IPU", "pause": "Pause", "gap": "Gap", "overlap": "Overlap",
                "ipu_pause": "Pause (all IPUs)", "ipu_gap": "Gap (all IPUs)"}


def reference_marker(name: str, color: str | None = None) -> dict:
    """A bar's marker: a Switchboard reference in its grey, the word-alignment one hatched."""
    if name not in REFERENCE_COLORS:
        return dict(color=color)
    return dict(color=REFERENCE_COLORS[name], pattern_shape="/" if name == WORD_REFERENCE else "")


def statistics_figure(stats: dict | list[dict], references: dict[str, dict] | None = None) -> go.Figure:
    """Events per minute and % of duration for IPU, pause, gap and overlap (and Talking Turns' IPU
    pause and gap).

    `stats` is one statistics dict or several (each with a "name" or "source"); `references`
    ({label: Switchboard table}, analysis.references) are drawn first, in grey.
    """
    own = [stats] if isinstance(stats, dict) else list(stats)
    series = [(label, table) for label, table in (references or {}).items()]
    series += [(s.get("name") or s.get("source") or f"series {i + 1}", s) for i, s in enumerate(own)]
    fig = make_subplots(rows=1, cols=2, subplot_titles=("Events per minute", "% of conversation duration"))
    labels = [EVENT_LABELS[e] for e in DURATION_EVENTS]
    for name, s in series:
        for col, key in ((1, "per_minute"), (2, "percent")):
            fig.add_trace(
                go.Bar(
                    x=labels,
                    y=[s[key][e] for e in DURATION_EVENTS],
                    name=name,
                    legendgroup=name,
                    showlegend=col == 1,
                    marker=reference_marker(name),
                ),
                row=1,
                col=col,
            )
    fig.update_layout(barmode="group", height=380, margin=dict(l=40, r=20, t=50, b=40))
    return fig

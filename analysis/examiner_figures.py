"""One examined example on one time axis (its stored timeline, examiner/timelines.py): the user's
and the system's waveform and speech, the system's words, the task's marks, and where the score
was decided (FDB's take-over turn and latency, the backchannel segments, the overlap probe)."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

CHANNELS = (("user", "user (input: what the system heard)"), ("system", "system (output)"))
TOR_COLOURS = {1: "#2ca02c", 0: "#7f7f7f"}


def _bars(fig, spans, label: str, name: str, color: str, row: int, text=None, hover=None) -> None:
    spans = [s for s in spans if s and s[0] is not None and s[1] is not None]
    if not spans:
        return
    starts = np.array([s for s, _ in spans], dtype=float)
    widths = np.maximum(np.array([e for _, e in spans], dtype=float) - starts, 0.02)
    fig.add_trace(go.Bar(base=starts, x=widths, y=[label] * len(spans), orientation="h", name=name, width=0.6,
                         marker_color=color, text=text, textposition="inside", insidetextanchor="start",
                         hovertext=hover or text, showlegend=True), row=row, col=1)


def decision_sentence(timeline: dict) -> str:
    """Where the example's score was decided, in words (the figure's subtitle)."""
    decision, marks = timeline.get("decision", {}), timeline.get("marks", {})
    parts = []
    if decision.get("rule") == "FDB take-over":
        turn = decision.get("turn")
        if turn is None:
            parts.append("TOR 0: no words")
        else:
            parts.append(f"TOR {decision['tor']}: {decision['words']} word(s) over {turn[1] - turn[0]:.2f} s from "
                         f"{turn[0]:.2f} s" + ("" if decision["tor"] else " (under 1 s with at most 3 words)"))
        if decision.get("latency_s") is not None:
            parts.append(f"latency {decision['latency_s']:.2f} s after {decision['user_end_s']:.2f} s")
    elif decision.get("rule") == "FDB backchannel scan":
        parts.append(f"TOR {decision['tor']}: {len(decision['backchannels'])} backchannel(s), "
                     f"{decision['frequency_per_s']:.3f}/s")
    overlap = decision.get("overlap")
    if overlap is not None:
        name = marks.get("event_name", "event")
        if not overlap["speaking"]:
            parts.append(f"not speaking when the {name} came")
        else:
            parts.append(f"{'stopped' if overlap['stopped'] else 'went on'} {overlap['stop_time_s']:.2f} s after the "
                         f"{name} began")
    return "; ".join(parts)


def example_timeline_figure(timeline: dict, title: str = "") -> go.Figure:
    """Rows: the user's waveform, the system's waveform, then a timeline of speech, words, marks
    and the decision; vertical lines at the turn end and the event."""
    fig = make_subplots(rows=3, cols=1, shared_xaxes=True, row_heights=[0.22, 0.22, 0.56], vertical_spacing=0.04)
    duration = timeline.get("duration_s") or 0.0
    channels = timeline.get("channels", {})
    for k, (key, name) in enumerate(CHANNELS):
        lows, highs = channels.get(key, {}).get("min", []), channels.get(key, {}).get("max", [])
        if lows:
            times = (np.arange(len(lows)) + 0.5) * duration / len(lows)
            fig.add_trace(go.Scatter(x=np.concatenate([times, times[::-1]]), y=np.concatenate([highs, lows[::-1]]),
                                     fill="toself", mode="lines", line=dict(width=0.5), name=f"{name} waveform"),
                          row=k + 1, col=1)
        fig.update_yaxes(title_text=key, row=k + 1, col=1)
    row = 3
    marks, decision = timeline.get("marks", {}), timeline.get("decision", {})
    # Plotly draws the first category at the bottom: listed bottom-up.
    _bars(fig, channels.get("system", {}).get("speech", []), "system speech", "system speech (Silero)", "#ff7f0e", row)
    words = timeline.get("words", [])
    _bars(fig, [(w["start"], w["end"] if w["end"] is not None else w["start"]) for w in words], "system words",
          "system words (ASR)", "#ffbb78", row, text=[w["text"] for w in words])
    if decision.get("turn"):
        _bars(fig, [decision["turn"]], "decision", f"take-over turn (TOR {decision['tor']})",
              TOR_COLOURS[decision["tor"]], row, text=[f"TOR {decision['tor']}"])
    if decision.get("latency"):
        _bars(fig, [decision["latency"]], "decision", "latency", "#9467bd", row,
              text=[f"{decision['latency_s']:.2f} s"])
    if decision.get("backchannels"):
        _bars(fig, decision["backchannels"], "decision", "backchannels (FDB scan)", "#17becf", row)
    overlap = decision.get("overlap") or {}
    if overlap.get("speaking") and marks.get("event"):
        start = marks["event"][0]
        _bars(fig, [(start, start + overlap["stop_time_s"])], "probe",
              "stop time" + (" (stopped)" if overlap["stopped"] else " (went on)"),
              "#d62728" if not overlap["stopped"] else "#2ca02c", row, text=[f"stop {overlap['stop_time_s']:.2f} s"])
    if marks.get("event"):
        _bars(fig, [marks["event"]], "task", marks.get("event_name", "event"), "#e377c2", row,
              text=[marks.get("event_text") or marks.get("event_name", "event")])
    if marks.get("pause"):
        _bars(fig, [marks["pause"]], "task", "pause", "#bcbd22", row, text=["pause"])
    if marks.get("pauses"):
        _bars(fig, marks["pauses"], "task", "monologue pauses", "#dbdb8d", row)
    _bars(fig, channels.get("user", {}).get("speech", []), "user speech", "user speech (Silero)", "#1f77b4", row)
    user_text = timeline.get("user_text", [])
    _bars(fig, [(t["start"], t["end"]) for t in user_text], "user text", "user text (the task's)", "#aec7e8", row,
          text=[t["text"] for t in user_text])
    lines = ((marks.get("turn_end_s"), "user turn end", "dash"), (marks.get("system_onset_s"), "system onset", "dashdot"),
             ((marks.get("event") or [None])[0], "event start", "dot"))
    for k, (at, label, dash) in enumerate(lines):
        if at is not None:
            fig.add_vline(x=at, line_dash=dash, line_width=1, line_color="#444", row="all", col=1)
            # one above the other: the turn end and the system's onset are often close
            fig.add_annotation(x=at, y=1.0, yref="paper", yshift=2 + 13 * k, text=label, showarrow=False,
                               font=dict(size=10), xanchor="left", yanchor="bottom")
    fig.update_xaxes(title_text="time (s)", range=[0, duration] if duration else None, row=3, col=1)
    subtitle = decision_sentence(timeline)
    fig.update_layout(height=640, margin=dict(l=60, r=20, t=130, b=40), barmode="overlay",
                      title=dict(text=f"{title}<br><sup>{subtitle}</sup>" if subtitle else title))
    return fig

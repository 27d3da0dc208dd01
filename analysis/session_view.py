"""One session on one time axis: both channels' waveforms, voice activity, turn-taking events and
the judge's view of the system's decisions.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from judge.metrics import METRIC_BY_NAME
from turntaking.activity import Conversation

SHOWN_EVENTS = ("gap", "pause", "overlap", "backchannel", "interruption")


def waveform_envelope(samples: np.ndarray, sample_rate: int, bins: int = 2000) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(bin centre times (n,), min (channels, n), max (channels, n)) of a (channels, samples) signal."""
    samples = np.atleast_2d(samples)
    n = samples.shape[1]
    bins = max(1, min(bins, n))
    edges = np.linspace(0, n, bins + 1).astype(int)
    lows = np.minimum.reduceat(samples, edges[:-1], axis=1)
    highs = np.maximum.reduceat(samples, edges[:-1], axis=1)
    return (edges[:-1] + edges[1:]) / 2 / sample_rate, lows, highs


def channel_names(system_channel: int) -> tuple[str, str]:
    """Who speaks on channels 0 and 1 of a call's recording: the participant and the system."""
    return ("system", "participant") if system_channel == 0 else ("participant", "system")


def events_table(stats: dict, names: dict | None = None) -> pd.DataFrame:
    """The session's events; `names`: {speaker in the statistics: the name to show} (channel A/B
    -> participant/system)."""
    names = names or {}
    rows = [{"event": name, "speaker": names.get(e["speaker"], e["speaker"]), "start": e["start"], "end": e["end"]}
            for name in SHOWN_EVENTS for e in stats.get("events", {}).get(name, [])]
    return pd.DataFrame(rows, columns=["event", "speaker", "start", "end"]).sort_values("start", kind="stable")


def decisions_table(instances: dict, thresholds, chunk_s: float = 0.04) -> pd.DataFrame:
    """Every metric instance (judge.metrics.Instances by metric) of a session: time, the decision
    made, the judge's decision at its threshold, its score and whether the two agree."""

    rows = []
    for metric, inst in instances.items():
        spec = METRIC_BY_NAME[metric]
        threshold = getattr(thresholds.metrics, metric)
        for chunk, positive, score in zip(inst.chunks, inst.positive, inst.scores):
            judged = bool(score > threshold)
            rows.append({"metric": metric, "time": float(chunk) * chunk_s, "decision": spec.decisions[0 if positive else 1],
                         "judge": spec.decisions[0 if judged else 1], "score": float(score),
                         "agrees": judged == bool(positive)})
    return pd.DataFrame(rows, columns=["metric", "time", "decision", "judge", "score", "agrees"])


def session_figure(conv: Conversation, envelope=None, events: pd.DataFrame | None = None,
                   decisions: pd.DataFrame | None = None, title: str = "",
                   speakers: tuple[str, str] | None = None) -> go.Figure:
    """`speakers`: the channels' names to show (default: the conversation's own)."""
    rows = 3 if envelope is not None else 1
    heights = [0.3, 0.3, 0.4] if envelope is not None else [1.0]
    fig = make_subplots(rows=rows, cols=1, shared_xaxes=True, row_heights=heights, vertical_spacing=0.04)
    names = list(speakers or conv.speakers)
    if envelope is not None:
        times, lows, highs = envelope
        for k in range(min(2, lows.shape[0])):
            fig.add_trace(go.Scatter(x=np.concatenate([times, times[::-1]]), y=np.concatenate([highs[k], lows[k][::-1]]),
                                     fill="toself", mode="lines", line=dict(width=0.5), name=f"{names[k]} waveform"),
                          row=k + 1, col=1)
    timeline = rows
    for k, segments in enumerate(conv.activity):
        if segments:
            starts = np.array([s for s, _ in segments])
            fig.add_trace(go.Bar(base=starts, x=np.array([e for _, e in segments]) - starts, y=[f"{names[k]} speech"] * len(segments),
                                 orientation="h", name=f"{names[k]} voice activity", width=0.6), row=timeline, col=1)
    if events is not None and len(events):
        for name, group in events.groupby("event", sort=False):
            fig.add_trace(go.Bar(base=group["start"], x=group["end"] - group["start"], y=[name] * len(group),
                                 orientation="h", name=name, width=0.6, hovertext=group["speaker"]), row=timeline, col=1)
    if decisions is not None and len(decisions):
        for agrees, color in ((True, "#2ca02c"), (False, "#d62728")):
            part = decisions[decisions["agrees"] == agrees]
            if len(part):
                fig.add_trace(go.Scatter(x=part["time"], y=["judge: " + m for m in part["metric"]], mode="markers",
                                         marker=dict(color=color, size=6, symbol="line-ns-open"),
                                         name="judge agrees" if agrees else "judge disagrees",
                                         text=part["decision"] + " (judge: " + part["judge"] + ")"), row=timeline, col=1)
    fig.update_xaxes(title_text="time (s)", row=rows, col=1)
    fig.update_layout(height=260 + 160 * rows, margin=dict(l=40, r=20, t=50, b=40), title=title, barmode="overlay")
    return fig


# The network summary's figures in the order the session view lists them, with what each is.
NETWORK_FIGURES = (
    ("rtt_ms_p50", "round trip, median (ms; the page's, else the server's)"),
    ("rtt_ms_p90", "round trip, 90th percentile (ms)"),
    ("server_rtt_ms_p50", "round trip the server measured over RTCP, median (ms)"),
    ("jitter_ms_p50", "jitter of the system's audio at the page, median (ms)"),
    ("server_jitter_ms_p50", "jitter of the participant's audio at the server, median (ms)"),
    ("loss_to_server", "lost fraction of the participant's audio packets"),
    ("loss_to_page", "lost fraction of the system's audio packets"),
    ("concealed_fraction", "fraction of the system's audio the page concealed"),
    ("playout_delay_ms_p50", "the page's playout (jitter buffer) delay, median (ms)"),
    ("lost_mic_s", "participant's audio lost, filled with zeros in the recording (s)"),
    ("late_blocks", "system audio blocks the server sent late (over 60 ms)"),
    ("candidate_type", "how the page connected (host, srflx, prflx, relay)"),
    ("relay_protocol", "the relay's protocol, where the page relayed"),
    ("page_samples", "samples from the page"),
    ("server_samples", "samples from the server"),
)


def network_table(network: dict) -> pd.DataFrame:
    """The call's network summary (studies.network_figures.summarise) as rows of figure, value
    and what it is; values as text, since they mix numbers, names and blanks."""
    rows = [{"figure": key, "value": "–" if network.get(key) is None else str(network[key]), "meaning": meaning}
            for key, meaning in NETWORK_FIGURES]
    return pd.DataFrame(rows, columns=["figure", "value", "meaning"])


def network_figure(series: dict[str, list[tuple[float, float]]], title: str = "") -> go.Figure:
    """Round trip (ms, top) and each direction's packet loss per interval (bottom) over the call's
    microphone clock (studies.network_figures.network_series)."""
    figure = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08,
                           subplot_titles=("round trip (ms)", "packet loss"))
    names = {"page rtt_ms": "page", "server rtt_ms": "server (RTCP)",
             "page loss": "system's audio (page)", "server loss": "participant's audio (server)"}
    for key, name in names.items():
        points = series.get(key, [])
        figure.add_trace(go.Scatter(x=[t for t, _ in points], y=[v for _, v in points], mode="lines+markers",
                                    name=name), row=1 if key.endswith("rtt_ms") else 2, col=1)
    figure.update_xaxes(title_text="call time (s, microphone clock)", row=2, col=1)
    figure.update_layout(title=title, height=420, margin={"t": 60, "b": 40})
    return figure

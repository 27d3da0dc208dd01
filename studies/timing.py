"""Measures from a call's timing log: how the mic sample clock kept pace with the server's clock.

The recorder logs a "clock" event every mic second with the server time `t`. A slope of 1 means
the mic clock ran at the server's rate; the residuals are how late mic audio arrived relative
to a steady stream (network and scheduling jitter). Channel 1 is placed on the mic clock, so
these residuals bound how far a system block's placement can be from when it was sent.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from studies.recorder import CallEvent


@dataclass
class ClockFit:
    slope: float  # server seconds per mic second
    residual_sd_ms: float
    residual_p99_ms: float  # |residual|
    points: int


def read_events(log_path: Path | str) -> list[dict]:
    return [json.loads(line) for line in Path(log_path).read_text().splitlines() if line.strip()]


def read_timing_log(path) -> list[dict]:
    """The log's events; a line that does not parse (the last one of a killed process) is left out."""
    events = []
    for line in Path(path).read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and isinstance(event.get("mic_s"), (int, float)):
            events.append(event)
    return events


def clock_fit(log_path: Path | str, skip_s: float = 2.0) -> ClockFit:
    """Least-squares line server time ~ mic time over the "clock" events (the first `skip_s`
    mic seconds left out: the connection settles)."""
    points = [(e["mic_s"], e["t"]) for e in read_events(log_path) if e["event"] == CallEvent.CLOCK and e["mic_s"] >= skip_s]
    if len(points) < 3:
        raise ValueError(f"{log_path}: too few clock events ({len(points)}) to fit the clocks")
    mic, server = np.array(points).T
    slope, intercept = np.polyfit(mic, server, 1)
    residuals = server - (slope * mic + intercept)
    return ClockFit(
        slope=round(float(slope), 6),
        residual_sd_ms=round(float(residuals.std() * 1000), 2),
        residual_p99_ms=round(float(np.percentile(np.abs(residuals), 99) * 1000), 2),
        points=len(points),
    )

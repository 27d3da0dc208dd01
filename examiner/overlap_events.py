"""What a system does when sound overlaps its speech (FDB v1.5's overlap tasks, voicebench's
barge-in probes), from Silero segments of its output merged over gaps up to 0.5 s (FDB v1.5's
`get_timing.py`, MODEL_MERGE_GAP).

- speaking: the system's speech covers the event's start.
- stop time: from the event's start to the end of that speech (voicebench's barge-in stop time).
- stopped: that speech ends no later than `STOP_GRACE_S` after the event ends. Good for an
  interruption; for a "mm-hmm", background speech or a cough it is a false barge-in.
- overlap: seconds of the event during the system's speech (get_timing.py's stop latency).
- response latency: from the event's end to the system's next speech onset after it.

These are the examiner's rules (FDB v1.5 rates behaviour with GPT; there is no offline equal).
"""

from __future__ import annotations

from dataclasses import dataclass

MODEL_MERGE_GAP_S = 0.5
STOP_GRACE_S = 1.0


def merge_segments(segments, gap_s: float = MODEL_MERGE_GAP_S) -> list[tuple[float, float]]:
    merged: list[list[float]] = []
    for start, end in sorted(segments):
        if merged and start - merged[-1][1] <= gap_s:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(s, e) for s, e in merged]


@dataclass(frozen=True)
class EventResponse:
    speaking: bool
    stop_time_s: float | None
    stopped: bool | None  # None when the system was not speaking at the event
    overlap_s: float
    response_latency_s: float | None


def event_response(model_segments, event_start: float, event_end: float) -> EventResponse:
    segments = merge_segments(model_segments)
    covering = next(((s, e) for s, e in segments if s <= event_start < e), None)
    overlap = sum(max(0.0, min(e, event_end) - max(s, event_start)) for s, e in segments)
    after = [s for s, _ in segments if s > event_end]
    latency = after[0] - event_end if after else None
    if covering is None:
        return EventResponse(False, None, None, round(overlap, 3), latency)
    stop = covering[1] - event_start
    return EventResponse(True, round(stop, 3), covering[1] <= event_end + STOP_GRACE_S, round(overlap, 3), latency)

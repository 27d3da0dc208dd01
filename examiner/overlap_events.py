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

from turntaking.segment import merge_segments

MODEL_MERGE_GAP_S = 0.5
STOP_GRACE_S = 1.0


@dataclass(frozen=True)
class EventResponse:
    speaking: bool
    stop_time_s: float | None
    stopped: bool | None  # None when the system was not speaking at the event
    overlap_s: float
    response_latency_s: float | None


def event_response(model_segments, event_start: float, event_end: float) -> EventResponse:
    """What the system did around a user event from event_start to event_end (the module's rules):
    stop time = end of the speech covering the start - event_start; stopped when that end is at
    most STOP_GRACE_S after event_end; overlap = speech seconds inside the event.

    >>> event_response([(0, 2.5), (6, 7)], event_start=1.0, event_end=2.0)  # stops 0.5 s after
    EventResponse(speaking=True, stop_time_s=1.5, stopped=True, overlap_s=1.0, response_latency_s=4.0)
    >>> event_response([(0, 2), (2.3, 3.5)], 1.0, 2.0).stopped  # the 0.3 s pause is bridged: ends at 3.5
    False
    >>> event_response([(3, 4)], 1.0, 2.0)
    EventResponse(speaking=False, stop_time_s=None, stopped=None, overlap_s=0.0, response_latency_s=1.0)
    """
    # as FDB's get_timing.py joins the model's speech, across gaps up to MODEL_MERGE_GAP_S; every
    # segment taken as given, as these rules always did
    segments = merge_segments(model_segments, gap=MODEL_MERGE_GAP_S, drop_empty=False)
    covering = next(((s, e) for s, e in segments if s <= event_start < e), None)
    overlap = sum(max(0.0, min(e, event_end) - max(s, event_start)) for s, e in segments)
    after = [s for s, _ in segments if s > event_end]
    latency = after[0] - event_end if after else None
    if covering is None:
        return EventResponse(False, None, None, round(overlap, 3), latency)
    stop = covering[1] - event_start
    return EventResponse(True, round(stop, 3), covering[1] <= event_end + STOP_GRACE_S, round(overlap, 3), latency)

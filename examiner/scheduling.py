"""An event placed on the system's speech onset during the call (as voicebench's scenarios do):
the user's question plays, the feed listens to what the system sends, and the event (an
interruption, a "mm-hmm", background speech, a cough) starts `after_system_onset_s` after the
system's first audible block that begins after the question ends. A system still silent
`ONSET_WAIT_S` after the question gets the event then (the example says so).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SAMPLE_RATE = 16000
ONSET_RMS = 0.01  # a system block louder than this (RMS) is speech
ONSET_WAIT_S = 10.0
AFTER_EVENT_S = 6.0  # played after the event, for the system's reaction


@dataclass
class ScheduledFeed:
    """The `studies.offline_call.MicFeed` of a scheduled task."""

    lead: np.ndarray  # the static input up to the question's end
    event: np.ndarray
    after_onset: int  # samples from the system's onset to the event
    tail: int = int(AFTER_EVENT_S * SAMPLE_RATE)
    wait: int = int(ONSET_WAIT_S * SAMPLE_RATE)
    onset: int | None = None  # the system's speech onset (mic-clock sample), once heard
    event_start: int | None = None

    def heard(self, position: int, reply: np.ndarray) -> None:
        if self.onset is not None or position < len(self.lead):
            return
        if float(np.sqrt(np.mean(np.square(reply, dtype=np.float64)))) > ONSET_RMS:
            self.onset = position
            self.event_start = position + self.after_onset

    def block(self, first: int, size: int) -> np.ndarray:
        if self.event_start is None and first >= len(self.lead) + self.wait:
            self.event_start = first  # no onset heard: the event now
        out = np.zeros(size, dtype=np.float32)
        _mix(out, first, self.lead, 0)
        if self.event_start is not None:
            _mix(out, first, self.event, self.event_start)
        return out

    def finished(self, position: int) -> bool:
        return self.event_start is not None and position >= self.event_start + len(self.event) + self.tail


def _mix(out: np.ndarray, first: int, audio: np.ndarray, at: int) -> None:
    """Add the part of `audio` (placed at sample `at`) that falls in `out` (which starts at `first`)."""
    lo, hi = max(first, at), min(first + len(out), at + len(audio))
    if hi > lo:
        out[lo - first:hi - first] += audio[lo - at:hi - at]

"""An event placed on the system's speech onset during the call (as voicebench's scenarios do):
the user's question plays, the feed listens to what the system sends, and the event (an
interruption, a "mm-hmm", background speech, a cough) starts `after_system_onset_s` after the
onset of the system's first answer after the question: the first run of audible blocks (pauses
under `ONSET_BRIDGE_S` bridged) that lasts `ONSET_MIN_S`, FDB's shortest take-over. A shorter run,
such as cascade-backchannel's "mm-hm" at the question's end, is not the answer's onset (it
was, at first: the event then came while the system was silent). A system that does not answer
within `ONSET_WAIT_S` after the question gets the event then (the example says so).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SAMPLE_RATE = 16000
ONSET_RMS = 0.01  # a system block louder than this (RMS) is speech
ONSET_MIN_S = 1.0
ONSET_BRIDGE_S = 0.3
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
    min_run: int = int(ONSET_MIN_S * SAMPLE_RATE)
    bridge: int = int(ONSET_BRIDGE_S * SAMPLE_RATE)
    onset: int | None = None  # the answer's onset (mic-clock sample), once heard
    event_start: int | None = None
    run_start: int | None = None  # the current run of audible system blocks
    run_end: int = 0

    def heard(self, position: int, reply: np.ndarray) -> None:
        if self.onset is not None or position < len(self.lead):
            return
        if not audible(reply):
            return
        if self.run_start is None or position - self.run_end > self.bridge:
            self.run_start = position
        self.run_end = position + len(reply)
        if self.run_end - self.run_start >= self.min_run:  # an answer, not a backchannel
            self.onset = self.run_start
            self.event_start = max(self.run_start + self.after_onset, self.run_end)

    def block(self, first: int, size: int) -> np.ndarray:
        if self.event_start is None and first >= len(self.lead) + self.wait:
            self.event_start = first  # no answer heard: the event now
        out = np.zeros(size, dtype=np.float32)
        mix_at(out, first, self.lead, 0)
        if self.event_start is not None:
            mix_at(out, first, self.event, self.event_start)
        return out

    def finished(self, position: int) -> bool:
        return self.event_start is not None and position >= self.event_start + len(self.event) + self.tail


def audible(block: np.ndarray) -> bool:
    """Whether a block of the system's audio is speech (louder than ONSET_RMS)."""
    return float(np.sqrt(np.mean(np.square(block, dtype=np.float64)))) > ONSET_RMS


def mix_at(out: np.ndarray, first: int, audio: np.ndarray, at: int) -> None:
    """Add the part of `audio` (placed at sample `at`) that falls in `out` (which starts at `first`)."""
    lo, hi = max(first, at), min(first + len(out), at + len(audio))
    if hi > lo:
        out[lo - first:hi - first] += audio[lo - at:hi - at]

"""A caller who talks over the system's answer: `OverTheReplyFeed` (a studies.offline_call.MicFeed),
shared by the tests of the embedded systems' barge-in."""

from __future__ import annotations

from collections import deque

import numpy as np

from examiner.scheduling import AFTER_EVENT_S, ScheduledFeed, audible, mix_at
from systems.base import BLOCK

RATE = 16000
SPOKEN_S = 0.5  # of the last second (20 ms blocks): the system is talking when a piece starts
MOST_WAIT_S = 4.0  # a piece waits no longer than this for the system to talk


class OverTheReplyFeed:
    """The caller's question, then pieces played over the system's answer (a `MicFeed`): the first
    a second after the answer's onset (examiner.scheduling's), each next one its gap after the one
    before ended, and each once the system has talked SPOKEN_S of the last second. At the start of
    a long reply the synthesis only just keeps ahead of the playback (the second sentence arrives as
    the first ends, on a quiet machine); on a loaded one the reply has gaps, and a piece played into
    one would not overlap the reply at all. `waited_s` says how long each piece waited."""

    def __init__(self, lead: np.ndarray, pieces: dict[str, np.ndarray], gap_after: dict[str, float]):
        self.answer = ScheduledFeed(lead, np.zeros(0, dtype=np.float32), after_onset=RATE)
        self.pieces, self.gap_after = pieces, gap_after
        self.queue = list(pieces)
        self.starts: dict[str, int] = {}  # mic-clock sample each piece started at
        self.waited_s: dict[str, float] = {}
        self.loud = deque()  # mic positions of the system's audible blocks in the last second
        self.earliest: int | None = None  # the next piece's earliest start

    def heard(self, position: int, reply: np.ndarray) -> None:
        self.answer.heard(position, reply)
        if audible(reply):
            self.loud.append(position)

    def block(self, first: int, size: int) -> np.ndarray:
        out = self.answer.block(first, size)
        if self.earliest is None:
            self.earliest = self.answer.event_start
        while self.loud and self.loud[0] < first - RATE:
            self.loud.popleft()
        if self.queue and self.earliest is not None and first >= self.earliest:
            talking = len(self.loud) * BLOCK / RATE >= SPOKEN_S
            if talking or first - self.earliest >= MOST_WAIT_S * RATE:
                name = self.queue.pop(0)
                self.starts[name] = first
                self.waited_s[name] = (first - self.earliest) / RATE
                self.earliest = first + len(self.pieces[name]) + int(self.gap_after.get(name, 0.0) * RATE)
        for name, start in self.starts.items():
            mix_at(out, first, self.pieces[name], start)
        return out

    def finished(self, position: int) -> bool:
        if self.queue or not self.starts:
            return False
        last = max(self.starts, key=self.starts.get)
        return position >= self.starts[last] + len(self.pieces[last]) + int(AFTER_EVENT_S * RATE)

"""Frame-by-frame turn-taking context of two-speaker voice activity, for the timing hazard model.

At every frame t (20 Hz) each speaker k either keeps or flips its state (silent <-> speaking) at
t + 1. What a listener of human conversation expects of that flip depends on the history up to t:

    own, other        the two speakers' states at t (speaking 1, silent 0)
    own_run           how long k's current state has lasted (frames, log-binned)
    other_run         how long the other's current state has lasted (log-binned)
    other_spoke_last  the other speaker stopped speaking more recently than k (in mutual silence:
                      a start of k would answer the other, a gap; otherwise k resumes, a pause)
    other_ipu         how long the other's most recent stretch of speech lasted (log-binned):
                      a long utterance just ended calls for an answer, a backchannel does not

Activity is taken at the IPU level (a channel's speech joined across silences of at most
`EventParams.ipu_silence_s`), so pauses and gaps are those of `turntaking.events`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from turntaking.activity import Conversation, activity_frames
from turntaking.events import EventParams, inter_pausal_units

FRAME_RATE = 20

# Run lengths in frames, binned on a ~sqrt(2) log scale (0.05 s .. 30 s and above).
RUN_EDGES = np.array([1, 2, 3, 4, 6, 8, 11, 16, 23, 32, 45, 64, 90, 128, 181, 256, 362, 600])
N_RUN_BINS = len(RUN_EDGES)
# The other's last utterance: backchannel-like, short, a sentence, a long turn.
IPU_EDGES = np.array([0, 10, 20, 40, 80])  # frames: < 0.5 s, < 1 s, < 2 s, < 4 s, longer
N_IPU_BINS = len(IPU_EDGES)


@dataclass(frozen=True)
class FrameContext:
    """Per speaker (2, n - 1) arrays: the context at frame t and whether the state flips at t + 1."""

    own: np.ndarray
    other: np.ndarray
    own_run: np.ndarray
    other_run: np.ndarray
    other_spoke_last: np.ndarray
    other_ipu: np.ndarray
    flips: np.ndarray

    @property
    def n_frames(self) -> int:
        return self.flips.shape[1]


def ipu_frames(conv: Conversation, events: EventParams = EventParams()) -> np.ndarray:
    """(2, n) 0/1 IPU-level voice activity at FRAME_RATE."""
    ipus = tuple(inter_pausal_units(conv.activity[k], events.ipu_silence_s) for k in (0, 1))
    return activity_frames(ipus, conv.duration, FRAME_RATE).astype(np.int8)


def run_lengths(x: np.ndarray) -> np.ndarray:
    """Frames since the current run of equal values began, counting the frame itself (1, 2, ...)."""
    n = len(x)
    change = np.ones(n, dtype=bool)
    change[1:] = x[1:] != x[:-1]
    start = np.maximum.accumulate(np.where(change, np.arange(n), 0))
    return np.arange(n) - start + 1


def last_speech_length(x: np.ndarray, runs: np.ndarray) -> np.ndarray:
    """Length of the speech run in progress, else of the most recent one (0 before any speech)."""
    n = len(x)
    ends = np.flatnonzero((x[:-1] == 1) & (x[1:] == 0))  # last frame of each finished speech run
    finished = np.zeros(n, dtype=np.int64)
    finished[ends + 1] = runs[ends]
    # Carry each finished run's length forward until the next one ends.
    marker = np.zeros(n, dtype=np.int64)
    marker[ends + 1] = ends + 1
    idx = np.maximum.accumulate(marker)
    carried = np.where(idx > 0, finished[idx], 0)
    return np.where(x == 1, runs, carried)


def run_bin(frames: np.ndarray) -> np.ndarray:
    return np.searchsorted(RUN_EDGES, frames, side="right") - 1


def ipu_bin(frames: np.ndarray) -> np.ndarray:
    return np.searchsorted(IPU_EDGES, frames, side="right") - 1


def frame_context(va: np.ndarray) -> FrameContext:
    """The context of every frame but the last, for both speakers (row k: speaker k's view)."""
    va = np.asarray(va, dtype=np.int8)
    if va.ndim != 2 or va.shape[0] != 2:
        raise ValueError(f"voice activity must be a (2, n_frames) array, got shape {va.shape}")
    runs = np.stack([run_lengths(va[k]) for k in (0, 1)])
    speech = np.stack([last_speech_length(va[k], runs[k]) for k in (0, 1)])
    # Frames since each speaker last spoke (0 while speaking; large before any speech).
    since = np.where(va == 1, 0, np.where(speech > 0, runs, 10**6))
    own, other = va[:, :-1], va[::-1, :-1]
    return FrameContext(
        own=own,
        other=other,
        own_run=run_bin(runs[:, :-1]),
        other_run=run_bin(runs[::-1, :-1]),
        other_spoke_last=(since[::-1, :-1] < since[:, :-1]).astype(np.int8),
        other_ipu=ipu_bin(speech[::-1, :-1]),
        flips=(va[:, 1:] != va[:, :-1]).astype(np.int8),
    )

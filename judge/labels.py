"""Talking Turns chunk labels (section 4.1 / A.3): one of C, BC, T, I, NA for every 40 ms chunk.

Per chunk i and speaker k we read
  y[k, i]   voice activity (the chunk's centre lies in speech of k),
  bc[k, i]  k is speaking inside one of its backchannels (events.backchannels),
  in_turn[k, i]  the chunk lies in a turn of k (events.turns: IPUs grouped across pauses).
The label of chunk i is, in this priority order:
  NA  nobody speaks;
  BC  a listener backchannels inside the other speaker's turn (bc[k,i] and in_turn[1-k,i]);
  I   both speak and neither backchannels;
  T   the one speaker now holding the floor differs from the previous floor holder: the first
      chunk of a turn change, whether it follows a gap, the other speaker's speech directly, or
      an interruption that ends up taking the floor (the paper's floor-taking special case: the
      interrupted speaker stops first, so the interrupter becomes the sole speaker);
  C   otherwise (the floor holder goes on, also after a pause or a butting-in interruption).
The floor holder is the last speaker who spoke alone outside a backchannel; a chunk where a
speaker speaks alone with no floor holder yet (start of the conversation) is C.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from turntaking.activity import Conversation
from turntaking.segment import Segment
from turntaking.events import EventParams, Events, detect_events

LABELS = ("C", "BC", "T", "I", "NA")
# What each label means, in a word or two, for people reading a table or a figure of them.
LABEL_MEANINGS = {"C": "continue", "BC": "backchannel", "T": "turn change", "I": "both speak", "NA": "silence"}
C, BC, T, I, NA = range(5)
CHUNK_S = 0.04


@dataclass
class ChunkStates:
    """Per-chunk state of a conversation, the inputs of the labels (all arrays have N chunks).

    speaking: (2, N) bool, speaker k's voice activity in chunk i.
    backchannel: (2, N) bool, k speaks inside one of its backchannels.
    in_turn: (2, N) bool, chunk inside a turn of k (events.turns, pauses included, gaps not).
    turn_owner: (N,) int, whose turn it is: the floor holder after chunk i (the last speaker who
        spoke alone outside a backchannel, kept through pauses, gaps and overlaps), -1 before
        anyone has held the floor. Use `turn_owner[i-1] == k` for "i-1 in TURN^k" when gaps
        should count as part of the previous speaker's turn.
    labels: (N,) int, index into LABELS.
    """

    chunk_s: float
    speaking: np.ndarray
    backchannel: np.ndarray
    in_turn: np.ndarray
    turn_owner: np.ndarray
    labels: np.ndarray

    @property
    def n_chunks(self) -> int:
        return len(self.labels)

    def chunk_times(self) -> np.ndarray:
        """Start time in seconds of every chunk."""
        return np.arange(self.n_chunks) * self.chunk_s


def n_chunks(duration: float, chunk_s: float = CHUNK_S) -> int:
    return int(round(duration / chunk_s))


def segments_mask(segments: list[Segment], n: int, chunk_s: float) -> np.ndarray:
    """(n,) bool: chunk centre inside one of the sorted, disjoint segments."""
    centres = (np.arange(n) + 0.5) * chunk_s
    if not segments:
        return np.zeros(n, dtype=bool)
    starts = np.array([s for s, _ in segments])
    ends = np.array([e for _, e in segments])
    idx = np.searchsorted(starts, centres, side="right") - 1
    out = np.zeros(n, dtype=bool)
    valid = idx >= 0
    out[valid] = centres[valid] < ends[idx[valid]]
    return out


def label_sequence(speaking: np.ndarray, backchannel: np.ndarray, in_turn: np.ndarray):
    """Labels and floor holders from per-chunk speaker states (see the module docstring)."""
    speaking = np.asarray(speaking, dtype=bool)
    n = speaking.shape[1]
    bc_in_turn = np.asarray(backchannel, dtype=bool) & speaking & np.asarray(in_turn, dtype=bool)[::-1]
    nobody = ~speaking[0] & ~speaking[1]
    any_bc = bc_in_turn[0] | bc_in_turn[1]
    both = speaking[0] & speaking[1]
    sole = ~nobody & ~any_bc & ~both
    sole_speaker = np.where(sole, np.where(speaking[0], 0, 1), -1)

    # Floor holder after chunk i: the speaker of the last sole-speaker chunk <= i (forward fill).
    last_sole = np.maximum.accumulate(np.where(sole, np.arange(n), -1)) if n else np.zeros(0, int)
    owner = np.where(last_sole >= 0, sole_speaker[np.maximum(last_sole, 0)], -1)
    previous_owner = np.concatenate([[-1], owner[:-1]])

    labels = np.full(n, C, dtype=np.int64)
    labels[sole & (previous_owner >= 0) & (previous_owner != sole_speaker)] = T
    labels[both & ~any_bc] = I
    labels[any_bc] = BC
    labels[nobody] = NA
    return labels, owner.astype(np.int64)


def chunk_states(
    conv: Conversation,
    events: Events | None = None,
    chunk_s: float = CHUNK_S,
    event_params: EventParams = EventParams(),
) -> ChunkStates:
    """Speaker activity, backchannel flags, turns, floor holder and label of every chunk."""
    if chunk_s <= 0:
        raise ValueError(f"chunk_s must be positive, got {chunk_s}")
    if events is None:
        events = detect_events(conv, event_params)
    n = n_chunks(conv.duration, chunk_s)
    speaking = np.stack([segments_mask(conv.activity[k], n, chunk_s) for k in (0, 1)])
    backchannel = np.stack([segments_mask(events.backchannels[k], n, chunk_s) for k in (0, 1)]) & speaking
    in_turn = np.stack([segments_mask(events.turns[k], n, chunk_s) for k in (0, 1)])
    labels, owner = label_sequence(speaking, backchannel, in_turn)
    return ChunkStates(chunk_s, speaking, backchannel, in_turn, owner, labels)


def chunk_labels(conv: Conversation, events: Events | None = None, chunk_s: float = CHUNK_S) -> np.ndarray:
    """(N,) label index (into LABELS) of every `chunk_s` chunk of the conversation."""
    return chunk_states(conv, events, chunk_s).labels

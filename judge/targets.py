"""Future voice-activity targets (VAP / TurnNat III-C) and turn-taking boundary units (TurnNat III-B).

At every 50 Hz frame t the target describes both speakers' voice activity over the next 2 s, in
four bins per speaker: [0, 200), [200, 600), [600, 1200), [1200, 2000) ms after frame t, i.e.
frames t+1..t+10, t+11..t+30, t+31..t+60, t+61..t+100. A bin is active when strictly more than
half of its frames are active. The 8 bits are ordered speaker 0 bins 0..3, then speaker 1 bins
0..3, and bit j has the value 2**j in the class index (0..255).
"""

from __future__ import annotations

import numpy as np

from turntaking.activity import Conversation
from turntaking.segment import merge_segments

FRAME_RATE = 50
BIN_EDGES_S = (0.0, 0.2, 0.6, 1.2, 2.0)
N_BINS = len(BIN_EDGES_S) - 1
N_CLASSES = 2 ** (2 * N_BINS)
BIN_EDGES_FRAMES = tuple(int(round(e * FRAME_RATE)) for e in BIN_EDGES_S)
HORIZON_FRAMES = BIN_EDGES_FRAMES[-1]
BIT_VALUES = (2 ** np.arange(2 * N_BINS)).reshape(2, N_BINS)


def future_bins(va_frames: np.ndarray) -> np.ndarray:
    """(M, 2, 4) bool: which future bins are active after each frame (False past the end)."""
    va = np.asarray(va_frames)
    if va.ndim != 2 or va.shape[0] != 2:
        raise ValueError(f"voice activity must be a (2, n_frames) array, got shape {va.shape}")
    m = va.shape[1]
    padded = np.zeros((2, m + HORIZON_FRAMES + 1), dtype=np.int64)
    padded[:, :m] = va > 0
    cumsum = np.concatenate([np.zeros((2, 1), np.int64), np.cumsum(padded, axis=1)], axis=1)
    t = np.arange(m)
    bins = np.zeros((m, 2, N_BINS), dtype=bool)
    for b in range(N_BINS):
        lo, hi = BIN_EDGES_FRAMES[b], BIN_EDGES_FRAMES[b + 1]
        # frames t+1+lo .. t+hi inclusive = cumsum[t+1+hi] - cumsum[t+1+lo]
        count = cumsum[:, t + 1 + hi] - cumsum[:, t + 1 + lo]
        bins[:, :, b] = (2 * count > (hi - lo)).T
    return bins


def encode_bins(bins) -> int | np.ndarray:
    """Class index of (..., 2, 4) bin activities (an int for a single (2, 4) pattern)."""
    b = np.asarray(bins)
    if b.shape[-2:] != (2, N_BINS):
        raise ValueError(f"bins must end in shape (2, {N_BINS}), got {b.shape}")
    codes = (b.astype(np.int64) * BIT_VALUES).sum(axis=(-2, -1))
    return int(codes) if codes.ndim == 0 else codes


def decode_class(c: int) -> np.ndarray:
    """(2, 4) bool bin activities of class index c."""
    c = int(c)
    if not 0 <= c < N_CLASSES:
        raise ValueError(f"future-activity class must be in 0..{N_CLASSES - 1}, got {c}")
    return (c & BIT_VALUES) > 0


def future_activity_classes(va_frames: np.ndarray) -> np.ndarray:
    """(M,) class 0..255 of every frame's 2 s future; -1 where the horizon runs past the end."""
    bins = future_bins(va_frames)
    classes = encode_bins(bins)
    m = bins.shape[0]
    classes = np.asarray(classes, dtype=np.int64).reshape(m)
    classes[max(m - HORIZON_FRAMES, 0):] = -1
    return classes


def turn_boundary_units(
    conv: Conversation, min_utterance_s: float = 0.2, length_s: float = 2.0, merge_gap_s: float = 0.0
):
    """TBUs: (start, end, kind) = [boundary - length_s, boundary] before every utterance onset and
    offset, for utterances (contiguous active regions of a channel) lasting >= min_utterance_s.
    `merge_gap_s` > 0 first joins regions closer than that (VAD-style cleaning of word-level
    activity). Starts are clipped at 0; units are sorted by boundary time."""
    units = []
    for segments in conv.activity:
        for start, end in merge_segments(segments, gap=merge_gap_s):
            if end - start + 1e-9 < min_utterance_s:
                continue
            units.append((max(0.0, start - length_s), start, "onset"))
            units.append((max(0.0, end - length_s), end, "offset"))
    return sorted(units, key=lambda u: (u[1], u[2]))


def tbu_frame_mask(units, n_frames: int, frame_rate: float = FRAME_RATE) -> np.ndarray:
    """(n_frames,) bool: frame t (its time t / frame_rate) lies in [start, end] of some unit."""
    mask = np.zeros(n_frames, dtype=bool)
    for start, end, _ in units:
        lo = int(np.ceil(start * frame_rate - 1e-9))
        hi = int(np.floor(end * frame_rate + 1e-9))
        mask[max(lo, 0) : min(hi, n_frames - 1) + 1] = True
    return mask

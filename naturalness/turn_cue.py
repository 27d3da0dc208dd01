"""An audio turn-completion cue: Smart Turn v3.2's P(utterance complete) at every IPU end.

Voice activity cannot tell a finished turn from a pause (judge/checkpoints/MODEL_CARD.md, "What
was tried"); the speaker's voice can. Where audio exists (calls, uploaded two-channel recordings, audio pairs),
each IPU end of each speaker gets Smart Turn's probability that the utterance is complete, from
the last 8 s of that speaker's channel up to the end (`speech.smart_turn`: the ONNX file inside
the pinned pipecat-ai wheel, sha256-checked at load, one clear error when it is missing or differs).

The timing-hazard scorer (`naturalness.timing_hazard`) uses the cues as evidence about who should
speak next in the silence after the end: the other speaker's start hazard is raised and the same
speaker's resume hazard lowered by `weight * (logit(p) - m)` on the log-odds scale, where m is the
median logit of that speaker's cues in the dialogue. Centering per speaker matters: Smart Turn's
level depends on the voice (on Piper's synthetic voice it says ~0.95-0.98 even after "I would
like to visit the"), so only an end that sounds more (or less) finished than the speaker's usual
is evidence. A finished question followed by a long silence, or by the same speaker going on, then
costs more likelihood; an unfinished utterance that is answered at once costs more too.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from speech.smart_turn import SAMPLE_RATE, SmartTurn
from turntaking.activity import Conversation
from turntaking.events import EventParams, inter_pausal_units


@dataclass(frozen=True)
class TurnEndCue:
    speaker: int
    time_s: float  # the IPU's end
    p_complete: float


def ipu_ends(conv: Conversation, events: EventParams = EventParams(), min_ipu_s: float = 0.3) -> list[tuple[int, float]]:
    """(speaker, end time) of every IPU of at least `min_ipu_s`, in time order."""
    ends = [(k, e) for k in (0, 1) for s, e in inter_pausal_units(conv.activity[k], events.ipu_silence_s)
            if e - s >= min_ipu_s]
    return sorted(ends, key=lambda x: x[1])


def smart_turn_cues(audio: np.ndarray, conv: Conversation, model: SmartTurn | None = None,
                    events: EventParams = EventParams(), batch_size: int = 16) -> list[TurnEndCue]:
    """Smart Turn's P(complete) at every IPU end; `audio` is (2, samples) at 16 kHz."""
    audio = np.asarray(audio, dtype=np.float32)
    if audio.ndim != 2 or audio.shape[0] != 2:
        raise ValueError(f"the audio cue needs two-channel audio, got shape {audio.shape}")
    model = model or SmartTurn()
    ends = ipu_ends(conv, events)
    window = int(model.window_s * SAMPLE_RATE)
    probs: list[float] = []
    for b in range(0, len(ends), batch_size):
        clips = []
        for k, t in ends[b:b + batch_size]:
            stop = int(round(t * SAMPLE_RATE))
            clips.append(audio[k, max(0, stop - window):stop])
        probs += model.predict(clips)
    return [TurnEndCue(k, t, p) for (k, t), p in zip(ends, probs)]


def cue_logit_shift(cues: list[TurnEndCue], va: np.ndarray, frame_rate: float, weight: float,
                    centre: float | None = None) -> np.ndarray:
    """(2, n - 1) log-odds added to each speaker's flip hazard at frame t (`frame_context` layout):
    in the mutual silence after an IPU end, +d for the other speaker and -d for the one who stopped,
    until either speaks again; d = weight * (logit(p) - m), m the median logit of that speaker's
    cues (`centre` None: for a cue whose level depends on the voice) or `centre` (a calibrated cue,
    `naturalness.word_cue`)."""
    shift = np.zeros((2, max(va.shape[1] - 1, 0)))
    logit = {c: float(np.log(_clip(c.p_complete) / (1 - _clip(c.p_complete)))) for c in cues}
    if centre is None:
        centre = {k: float(np.median([v for c, v in logit.items() if c.speaker == k] or [0.0])) for k in (0, 1)}
    else:
        centre = {0: float(centre), 1: float(centre)}
    for cue, f, stop in cue_spans(cues, va, frame_rate):
        delta = weight * (logit[cue] - centre[cue.speaker])
        shift[1 - cue.speaker, f:stop] += delta
        shift[cue.speaker, f:stop] -= delta
    return shift


def cue_spans(cues: list[TurnEndCue], va: np.ndarray, frame_rate: float) -> list[tuple[TurnEndCue, int, int]]:
    """(cue, first, stop) frame transitions of the mutual silence after each cue's IPU end, until
    either speaker speaks again (`frame_context` layout: transition t is frame t -> t + 1)."""
    n = va.shape[1]
    silent = (va[0] == 0) & (va[1] == 0)
    out = []
    for cue in cues:
        f = int(round(cue.time_s * frame_rate))
        if f >= n - 1 or not silent[f]:
            continue
        stop = f + int(np.argmin(silent[f:n - 1])) if not silent[f:n - 1].all() else n - 1
        out.append((cue, f, stop))
    return out


def _clip(p: float) -> float:
    return min(max(float(p), 1e-4), 1 - 1e-4)

"""Words with times for each speaker, from faster-whisper, transcribing only where they speak.

Each track's speech regions (its voice activity, padded a little) are cut out and joined into
pieces of at most 30 s (Whisper's window, so no word is split between two calls); each piece
is transcribed with word timestamps and the times are mapped back to the recording. Silence is
never transcribed, which is both faster and avoids Whisper's hallucinations in silence.

The default model is the packaged Whisper tiny.en (analysis/models.py); `model` may name a local
CTranslate2 directory or a Hugging Face id (downloaded when online).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from analysis.activity import Word, normalize_segments
from analysis.models import whisper_model_location

SAMPLE_RATE = 16000


@dataclass(frozen=True)
class AsrParams:
    pad_s: float = 0.2  # audio kept around each speech region
    beam_size: int = 1  # greedy decoding: 2-3x faster than 5, same words on clear speech
    language: str = "en"
    cpu_threads: int = 2


@lru_cache(maxsize=4)
def load_whisper(model: str | None = None, cpu_threads: int = 2):
    from faster_whisper import WhisperModel

    return WhisperModel(whisper_model_location(model), device="cpu", compute_type="int8", cpu_threads=cpu_threads)


def clean_word(text: str) -> str:
    """Lower case, punctuation stripped (apostrophes inside words kept: "don't")."""
    return re.sub(r"[^\w']+", "", text.lower()).strip("'")


def transcribe_track(signal: np.ndarray, segments, model=None, params: AsrParams = AsrParams()) -> list[Word]:
    """Words spoken in `segments` (s) of one 16 kHz signal, in the recording's time base."""
    from faster_whisper.vad import SpeechTimestampsMap, collect_chunks

    duration = len(signal) / SAMPLE_RATE
    speech = normalize_segments(segments)
    regions = normalize_segments(
        [(max(0.0, s - params.pad_s), min(duration, e + params.pad_s)) for s, e in segments]
    )
    spans = [{"start": int(s * SAMPLE_RATE), "end": int(e * SAMPLE_RATE)} for s, e in regions]
    spans = [span for span in spans if span["end"] > span["start"]]
    if not spans:
        return []
    whisper = load_whisper(model, params.cpu_threads)
    pieces, pieces_meta = collect_chunks(signal, spans, SAMPLE_RATE, max_duration=30.0)
    # Maps a time in all regions joined end to end back to the recording.
    joined_to_recording = SpeechTimestampsMap(spans, SAMPLE_RATE, time_precision=3)
    words: list[Word] = []
    for audio, meta in zip(pieces, pieces_meta):
        if len(audio) == 0:
            continue
        result, _ = whisper.transcribe(
            np.ascontiguousarray(audio, dtype=np.float32),
            language=params.language,
            beam_size=params.beam_size,
            word_timestamps=True,
            vad_filter=False,
            condition_on_previous_text=False,
        )
        for segment in result:
            for w in segment.words or []:
                text = clean_word(w.word)
                if not text:
                    continue
                start, end = meta["offset"] + w.start, meta["offset"] + w.end
                # Both ends are mapped through the region holding the word's middle.
                k = joined_to_recording.get_chunk_index((start + end) / 2)
                start = float(joined_to_recording.get_original_time(start, k))
                end = float(joined_to_recording.get_original_time(end, k))
                # Whisper's word edges are rough (~0.1-0.3 s): keep each word inside the
                # speech segment nearest to it, so words agree with the voice activity.
                lo, hi = _nearest(speech, (start + end) / 2)
                start = min(max(start, lo), hi)
                end = min(max(end, start), hi)
                words.append(Word(round(start, 3), round(end, 3), text))
    return words


def _nearest(segments, t: float) -> tuple[float, float]:
    """The segment containing time `t`, else the closest one."""
    return min(segments, key=lambda seg: max(seg[0] - t, t - seg[1], 0.0))


def transcribe_channels(samples, sample_rate: int, activity, mixture=None, model: str | None = None,
                        params: AsrParams = AsrParams()):
    """(words_A, words_B): each speaker's words, from their own channel of `samples` (2, n), or,
    for a mono recording (`samples` None), from the `mixture` during their voice activity."""
    if sample_rate != SAMPLE_RATE:
        raise ValueError(f"transcription needs {SAMPLE_RATE} Hz audio, got {sample_rate} Hz")
    if samples is None and mixture is None:
        raise ValueError("transcription needs the channels or the mono mixture")
    tracks = []
    for k in range(2):
        signal = samples[k] if samples is not None else mixture
        tracks.append(transcribe_track(np.asarray(signal, dtype=np.float32), activity[k], model, params))
    return tracks[0], tracks[1]

"""The voice stage: Piper speech synthesis, 16 kHz, each sentence's peak limited."""

from __future__ import annotations

from typing import Iterator

import numpy as np

from speech.audio import resample
from systems.base import SAMPLE_RATE
from systems.models import piper_voice_files


# Piper scales each sentence to full scale, and resampling overshoots that: replies clipped in the
# recording and in the browser. Each sentence's peak is brought down to this (headroom for the
# call's Opus codec as well).
REPLY_PEAK_DBFS = -3.0


def limit_peak(audio: np.ndarray, peak_dbfs: float = REPLY_PEAK_DBFS) -> np.ndarray:
    """`audio` scaled down so that its peak is at most `peak_dbfs` (quieter audio is left alone)."""
    peak, limit = float(np.abs(audio).max(initial=0.0)), 10 ** (peak_dbfs / 20)
    return audio * np.float32(limit / peak) if peak > limit else audio


class PiperTTS:
    """Piper voice (the packaged en_US-joe-medium by default); yields 16 kHz float32 audio per
    sentence, its peak at most REPLY_PEAK_DBFS."""

    def __init__(self, voice: str | None = None):
        from piper import PiperVoice

        model, config = piper_voice_files(voice)
        self.voice = PiperVoice.load(str(model), config_path=str(config))
        # The first sentence imports scipy.signal (the resampling) and sets onnxruntime up: about
        # 1 s, most of it holding the interpreter's lock. Said at a call's first reply, it left
        # every live call's audio up to 0.46 s behind; said here, it is part of the loading.
        for _ in self.synthesize("Okay."):
            pass

    def synthesize(self, text: str) -> Iterator[np.ndarray]:
        for chunk in self.voice.synthesize(text):
            audio = chunk.audio_int16_array.astype(np.float32) / 32768.0
            yield limit_peak(resample(audio, chunk.sample_rate, SAMPLE_RATE))

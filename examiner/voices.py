"""The packaged voices the task sets speak with: Piper (en_US-joe-medium) at several rates and
espeak-ng with several speakers and rates, all 16 kHz mono, trimmed to their audible samples and
brought to one loudness, so that a placed utterance's first and last audible samples are its
known onset and offset.
"""

from __future__ import annotations

import subprocess
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Protocol

import numpy as np
import soundfile

from speech.audio import resample
from studies.systems.models import piper_voice_files

SAMPLE_RATE = 16000
AUDIBLE = 0.01  # a sample louder than this (after levelling) is speech
TARGET_RMS = 0.06  # about -24 dBFS


@dataclass(frozen=True)
class Voice:
    engine: str  # "piper" or "espeak-ng"
    speaker: str  # Piper: the packaged voice's name; espeak-ng: its voice id
    rate: float  # Piper: speaking rate (1 / length_scale); espeak-ng: words per minute

    @property
    def label(self) -> str:
        return f"{self.engine}:{self.speaker}@{self.rate:g}"


# Two engines, several speakers and rates, so that no system is tuned to one voice.
VOICES = (
    Voice("piper", "en_US-joe-medium", 0.9),
    Voice("piper", "en_US-joe-medium", 1.0),
    Voice("piper", "en_US-joe-medium", 1.15),
    Voice("espeak-ng", "en-us+f3", 150),
    Voice("espeak-ng", "en-gb+m3", 175),
    Voice("espeak-ng", "en-us+f4", 195),
)


class Synthesizer(Protocol):
    def __call__(self, text: str, voice: Voice) -> np.ndarray: ...


def espeak_audio(text: str, voice: Voice) -> np.ndarray:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "line.wav"
        subprocess.run(["espeak-ng", "-v", voice.speaker, "-s", str(int(voice.rate)), "-w", str(path), text],
                       check=True, capture_output=True)
        samples, rate = soundfile.read(str(path), dtype="float32")
    return resample(samples, rate, SAMPLE_RATE)


@lru_cache(maxsize=1)
def _piper_voice():
    from piper import PiperVoice

    model, config = piper_voice_files(None)
    return PiperVoice.load(str(model), config_path=str(config))


def piper_audio(text: str, voice: Voice) -> np.ndarray:
    from piper import SynthesisConfig

    # Without Piper's sampling noise the same text and rate give the same samples: a task set is
    # reproducible from its seed (the noise comes from inside the ONNX model, which takes no seed).
    config = SynthesisConfig(length_scale=1.0 / voice.rate, noise_scale=0.0, noise_w_scale=0.0)
    chunks = [resample(c.audio_int16_array.astype(np.float32) / 32768.0, c.sample_rate, SAMPLE_RATE)
              for c in _piper_voice().synthesize(text, syn_config=config)]
    return np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.float32)


ENGINES: dict[str, Synthesizer] = {"piper": piper_audio, "espeak-ng": espeak_audio}


def level(audio: np.ndarray, rms: float = TARGET_RMS) -> np.ndarray:
    now = float(np.sqrt(np.mean(audio.astype(np.float64) ** 2))) if len(audio) else 0.0
    return (audio * (rms / now)).astype(np.float32) if now > 0 else audio.astype(np.float32)


def trim(audio: np.ndarray) -> np.ndarray:
    loud = np.flatnonzero(np.abs(audio) > AUDIBLE)
    return audio[loud[0]:loud[-1] + 1] if len(loud) else audio[:0]


@lru_cache(maxsize=256)
def speak(text: str, voice: Voice, rms: float = TARGET_RMS) -> np.ndarray:
    """`text` in `voice`, levelled, then trimmed to its audible samples."""
    audio = trim(level(ENGINES[voice.engine](text, voice), rms))
    if not len(audio):
        raise ValueError(f"{voice.label} said nothing audible for {text!r}")
    return audio

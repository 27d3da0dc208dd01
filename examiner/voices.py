"""The packaged voices the task sets speak with: Piper (en_US-joe-medium) at several rates and
espeak-ng with several speakers and rates, all 16 kHz mono, trimmed to their audible samples and
brought to one loudness, so that a placed utterance's first and last audible samples are its
known onset and offset.

Named voice sets (`make-tasks --voices`), one for each use (docs/dialogue-systems.md says which
set chose each setting):
- `fitting`: the six voices the embedded systems' settings were fitted on (`VOICES`, unchanged so
  that earlier task sets are made again from their seed);
- `choosing` (formerly `held-out`, a name still accepted): other English espeak-ng voices and
  variants and Piper at other rates and sampling-noise scales. No setting was fitted on them, but
  settings have been checked on them again and again, so they choose between candidates now;
- `test`: voices in neither, run once when the settings are final (examiner.test_set);
- `-noisy` of each: the same voices in a room (sox's reverb) with steady background noise 15 dB
  below the speech.
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
from systems.models import piper_voice_files

SAMPLE_RATE = 16000
AUDIBLE = 0.01  # a sample louder than this (after levelling) is speech
TARGET_RMS = 0.06  # about -24 dBFS


@dataclass(frozen=True)
class Voice:
    engine: str  # "piper" or "espeak-ng"
    speaker: str  # Piper: the packaged voice's name; espeak-ng: its voice id
    rate: float  # Piper: speaking rate (1 / length_scale); espeak-ng: words per minute
    noise_scale: float = 0.0  # Piper's sampling noise (0: none, the same samples every time); espeak-ng: 0

    @property
    def label(self) -> str:
        noise = f"~noise{self.noise_scale:g}" if self.noise_scale else ""
        return f"{self.engine}:{self.speaker}@{self.rate:g}{noise}"


# Two engines, several speakers and rates, so that no system is tuned to one voice.
VOICES = (
    Voice("piper", "en_US-joe-medium", 0.9),
    Voice("piper", "en_US-joe-medium", 1.0),
    Voice("piper", "en_US-joe-medium", 1.15),
    Voice("espeak-ng", "en-us+f3", 150),
    Voice("espeak-ng", "en-gb+m3", 175),
    Voice("espeak-ng", "en-us+f4", 195),
)
# Disjoint from VOICES (no voice id of theirs, Piper at other rates): for checking settings chosen on them.
HELD_OUT_VOICES = (
    Voice("piper", "en_US-joe-medium", 0.8, noise_scale=0.667),  # Piper's own default noise
    Voice("piper", "en_US-joe-medium", 1.05, noise_scale=0.333),
    Voice("piper", "en_US-joe-medium", 1.35),
    Voice("espeak-ng", "en-gb-x-rp+m1", 165),
    Voice("espeak-ng", "en-us-nyc+f2", 150),
    Voice("espeak-ng", "en-029+m4", 175),
    Voice("espeak-ng", "en-gb-scotland+f1", 140),
    Voice("espeak-ng", "en-gb-x-gbclan+m2", 185),
    Voice("espeak-ng", "en-gb-x-gbcwmd+f3", 200),
)
# Disjoint from both and from analysis.switchboard_renderings' voices: the test set, run once when
# the settings are final (examiner.test_set keeps the record).
TEST_VOICES = (
    Voice("piper", "en_US-joe-medium", 0.95, noise_scale=0.5),
    Voice("piper", "en_US-joe-medium", 1.2, noise_scale=0.8),
    Voice("piper", "en_US-joe-medium", 1.45),
    Voice("espeak-ng", "en-us+m2", 160),
    Voice("espeak-ng", "en-gb+f2", 180),
    Voice("espeak-ng", "en-gb-x-rp+f4", 170),
    Voice("espeak-ng", "en-029+f1", 155),
    Voice("espeak-ng", "en-gb-scotland+m5", 190),
    Voice("espeak-ng", "en-gb-x-gbcwmd+m6", 145),
)
NOISE_BELOW_DB = 15.0  # the noisy set's background noise, below the speech's level (TARGET_RMS)
REVERB = ("reverb", "50", "50", "100", "100", "0", "0")  # sox's defaults: a mid-sized room, dry and wet mixed


@dataclass(frozen=True)
class VoiceSet:
    name: str
    voices: tuple[Voice, ...]
    noise_below_db: float | None = None  # steady background noise this far below the speech (None: none)
    reverberant: bool = False  # every example through `REVERB`

    @property
    def in_room(self) -> bool:
        return self.noise_below_db is not None or self.reverberant


VOICE_SETS = {
    "fitting": VoiceSet("fitting", VOICES),
    "fitting-noisy": VoiceSet("fitting-noisy", VOICES, noise_below_db=NOISE_BELOW_DB, reverberant=True),
    "choosing": VoiceSet("choosing", HELD_OUT_VOICES),
    "choosing-noisy": VoiceSet("choosing-noisy", HELD_OUT_VOICES, noise_below_db=NOISE_BELOW_DB, reverberant=True),
    "test": VoiceSet("test", TEST_VOICES),
    "test-noisy": VoiceSet("test-noisy", TEST_VOICES, noise_below_db=NOISE_BELOW_DB, reverberant=True),
    # the choosing voices' earlier name, kept so that task sets made with it are made again the same
    "held-out": VoiceSet("held-out", HELD_OUT_VOICES),
    "held-out-noisy": VoiceSet("held-out-noisy", HELD_OUT_VOICES, noise_below_db=NOISE_BELOW_DB, reverberant=True),
}


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
    # A voice with noise varies its sound from run to run; the durations' noise stays off, so
    # that its utterances keep their lengths and the set's times.
    config = SynthesisConfig(length_scale=1.0 / voice.rate, noise_scale=voice.noise_scale, noise_w_scale=0.0)
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


def pink_noise(n: int, rms: float, seed: int) -> np.ndarray:
    """Steady 1/f noise (a room's hum and hiss more than white noise is), `n` samples at `rms`."""
    spectrum = np.fft.rfft(np.random.default_rng(seed).standard_normal(n))
    spectrum[1:] /= np.sqrt(np.arange(1, len(spectrum)))
    spectrum[0] = 0.0
    noise = np.fft.irfft(spectrum, n)
    return (noise * (rms / np.sqrt(np.mean(noise ** 2)))).astype(np.float32)


def reverberate(audio: np.ndarray) -> np.ndarray:
    """`audio` through sox's reverb, the same length and aligned (the dry sound is kept in the mix)."""
    with tempfile.TemporaryDirectory() as tmp:
        dry, wet = Path(tmp) / "dry.wav", Path(tmp) / "wet.wav"
        soundfile.write(str(dry), audio, SAMPLE_RATE, subtype="FLOAT")
        subprocess.run(["sox", str(dry), str(wet), *REVERB], check=True, capture_output=True)
        out, _ = soundfile.read(str(wet), dtype="float32")
    out = out[:len(audio)]
    return np.pad(out, (0, len(audio) - len(out))).astype(np.float32)


def in_room(audio: np.ndarray, voices: VoiceSet, seed: int) -> np.ndarray:
    """A placed example as `voices`' room makes it: reverberated, then the noise added throughout."""
    if voices.reverberant:
        audio = reverberate(audio)
    if voices.noise_below_db is not None and len(audio):
        audio = audio + pink_noise(len(audio), TARGET_RMS * 10 ** (-voices.noise_below_db / 20), seed)
    return audio.astype(np.float32)

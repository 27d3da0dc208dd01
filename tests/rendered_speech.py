"""Real speech at known times, for every audio test.

`render_speech` speaks sentences with espeak-ng (resampled to 16 kHz mono with sox), trims each
rendering to its first and last audible sample, and places it so that its audible onset falls
exactly on the requested time in the requested channel. It returns the audio and, for every
utterance, the onset and offset measured from the placed samples.

    speech = render_speech([Utterance(0, 0.5, "hello there how are you"),
                            Utterance(1, 2.8, "i am fine thank you", voice="en-us+f3")], duration=5)
    speech.samples      # float32 (2, 80000)
    speech.utterances   # [Placed(channel=0, start=0.5, end=1.93..., text=..., voice=...), ...]
    speech.write(tmp_path / "x.wav")             # 2-channel 16-bit WAV
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest
import soundfile

SAMPLE_RATE = 16000
# Audible = louder than this fraction of full scale (espeak pads with digital silence).
AUDIBLE = 1e-3


@dataclass(frozen=True)
class Utterance:
    channel: int
    start: float  # where the audible onset goes, s
    text: str
    voice: str = "en-us"
    pitch: int | None = None  # espeak-ng -p (0-99)
    # sox's dither with fixed random numbers (-R): the same samples in every process. Whisper's
    # words for a borderline sound (a hummed "mm-hmm") can change with the dither's noise.
    repeatable: bool = False


@dataclass(frozen=True)
class Placed:
    channel: int
    start: float  # first audible sample, s
    end: float  # just after the last audible sample, s
    text: str
    voice: str


@dataclass
class RenderedSpeech:
    samples: np.ndarray  # float32 (channels, n)
    sample_rate: int
    utterances: list[Placed]

    @property
    def duration(self) -> float:
        return self.samples.shape[1] / self.sample_rate

    def in_channel(self, channel: int) -> list[Placed]:
        return [u for u in self.utterances if u.channel == channel]

    def mixture(self) -> np.ndarray:
        return self.samples.sum(axis=0, dtype=np.float32)

    def write(self, path, mono: bool = False, subtype: str = "PCM_16") -> Path:
        data = self.mixture()[None] if mono else self.samples
        soundfile.write(str(path), data.T, self.sample_rate, subtype=subtype)
        return Path(path)


def require_tools():
    missing = [tool for tool in ("espeak-ng", "sox") if shutil.which(tool) is None]
    if missing:
        # Not a skip: the audio tests need these (apt-get install espeak-ng sox).
        raise RuntimeError(f"missing {' and '.join(missing)}: apt-get install espeak-ng sox")


@lru_cache(maxsize=None)
def speak(text: str, voice: str = "en-us", pitch: int | None = None, repeatable: bool = False) -> np.ndarray:
    """espeak-ng's rendering of `text` at 16 kHz mono, trimmed to its audible samples."""
    require_tools()
    with tempfile.TemporaryDirectory() as tmp:
        raw, wav = Path(tmp) / "raw.wav", Path(tmp) / "16k.wav"
        command = ["espeak-ng", "-v", voice, "-w", str(raw)]
        if pitch is not None:
            command += ["-p", str(pitch)]
        subprocess.run(command + [text], check=True, capture_output=True)
        sox = ["sox", "-R"] if repeatable else ["sox"]
        subprocess.run(sox + [str(raw), "-r", str(SAMPLE_RATE), "-c", "1", str(wav)], check=True, capture_output=True)
        audio, rate = soundfile.read(str(wav), dtype="float32")
    assert rate == SAMPLE_RATE
    audible = np.flatnonzero(np.abs(audio) > AUDIBLE)
    return audio[audible[0]:audible[-1] + 1].copy()


def render_speech(utterances, duration: float, channels: int = 2, gain: float = 0.8) -> RenderedSpeech:
    """Place each utterance's audible onset at its `start` in its channel of a silent recording."""
    n = int(round(duration * SAMPLE_RATE))
    samples = np.zeros((channels, n), dtype=np.float32)
    placed = []
    for u in utterances:
        clip = speak(u.text, u.voice, u.pitch, u.repeatable) * gain
        first = int(round(u.start * SAMPLE_RATE))
        if first + len(clip) > n:
            raise ValueError(f"utterance {u.text!r} at {u.start} s runs past the {duration} s recording")
        samples[u.channel, first:first + len(clip)] += clip
        placed.append(Placed(u.channel, first / SAMPLE_RATE, (first + len(clip)) / SAMPLE_RATE, u.text, u.voice))
    placed.sort(key=lambda p: (p.start, p.channel))
    return RenderedSpeech(samples, SAMPLE_RATE, placed)


def alternating_dialogue(texts, first_start: float = 0.5, gap: float = 0.6, voices=("en-us", "en-us+f3"),
                         tail: float = 0.8) -> RenderedSpeech:
    """Turns alternating between channel 0 and 1, each starting `gap` s after the previous ends."""
    plan, t = [], first_start
    for k, text in enumerate(texts):
        channel = k % 2
        plan.append(Utterance(channel, round(t, 4), text, voices[channel]))
        t += len(speak(text, voices[channel])) / SAMPLE_RATE + gap
    return render_speech(plan, duration=t - gap + tail)


DIALOGUE_TEXTS = (
    "hello there how are you today",
    "i am fine thank you very much",
    "would you like to go for a walk",
    "yes that sounds like a lovely idea",
    "let us meet at the park at noon",
)


@pytest.fixture(scope="session")
def dialogue() -> RenderedSpeech:
    """Five alternating turns, two voices, 0.6 s gaps: channel 0 speaks first."""
    return alternating_dialogue(DIALOGUE_TEXTS)


@pytest.fixture(scope="session")
def dialogue_wav(dialogue, tmp_path_factory) -> Path:
    return dialogue.write(tmp_path_factory.mktemp("speech") / "dialogue.wav")

"""The demo's speech, from the packaged voices only: Piper's en_US-joe-medium for speaker 0 and
espeak-ng (a female variant, so the two people sound different) for speaker 1, both 16 kHz mono,
trimmed to the audible part and brought to one loudness.

    voices = DemoVoices()
    samples, placed = render_dialogue(DIALOGUES[0], voices)   # (2, n) float32, [(speaker, start, end, text)]
    caller = render_caller(lines, voices)                     # mono: lines with room for replies
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

import numpy as np
import soundfile

from speech.audio import resample
from demo.dialogues import CALLER_GAP_S, Dialogue
from systems.voice import PiperTTS

SAMPLE_RATE = 16000
ESPEAK_VOICE = "en-us+f3"
ESPEAK_WORDS_PER_MINUTE = "165"
TARGET_RMS = 0.06  # about -24 dBFS: both voices equally loud, far from clipping
AUDIBLE = 0.01
LEAD_S, TAIL_S = 0.6, 0.8


class DemoVoices:
    """Speaker 0: Piper (loaded once); speaker 1: espeak-ng."""

    def __init__(self):
        self.piper = PiperTTS()

    def speak(self, speaker: int, text: str) -> np.ndarray:
        audio = np.concatenate(list(self.piper.synthesize(text))) if speaker == 0 else espeak(text)
        return level(trim(audio))


def espeak(text: str, voice: str = ESPEAK_VOICE) -> np.ndarray:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "line.wav"
        subprocess.run(["espeak-ng", "-v", voice, "-s", ESPEAK_WORDS_PER_MINUTE, "-w", str(path), text],
                       check=True, capture_output=True)
        samples, rate = soundfile.read(str(path), dtype="float32")
    return resample(samples, rate, SAMPLE_RATE)


def trim(audio: np.ndarray) -> np.ndarray:
    loud = np.flatnonzero(np.abs(audio) > AUDIBLE)
    return audio[loud[0]:loud[-1] + 1] if len(loud) else audio[:0]


def level(audio: np.ndarray) -> np.ndarray:
    rms = float(np.sqrt(np.mean(audio.astype(np.float64) ** 2))) if len(audio) else 0.0
    return (audio * (TARGET_RMS / rms)).astype(np.float32) if rms > 0 else audio.astype(np.float32)


def render_dialogue(dialogue: Dialogue, voices: DemoVoices):
    """Both speakers on their own channel at the script's timings: ((2, n) float32, placed lines)."""
    placed = []  # (speaker, start_s, end_s, text)
    clips = []
    main_start = main_end = LEAD_S - 0.3  # the first line starts at LEAD_S (after_s 0.3 by default)
    for line in dialogue.lines:
        speech = voices.speak(line.speaker, line.text)
        length = len(speech) / SAMPLE_RATE
        if line.within is not None:  # inside the previous line, which keeps the timing
            start = main_start + line.within * (main_end - main_start)
        else:
            start = max(0.0, main_end + line.after_s)
            main_start, main_end = start, start + length
        placed.append((line.speaker, round(start, 3), round(start + length, 3), line.text))
        clips.append((line.speaker, start, speech))
    total = max(end for _, _, end, _ in placed) + TAIL_S
    out = np.zeros((2, int(round(total * SAMPLE_RATE))), dtype=np.float32)
    for speaker, start, speech in clips:
        at = int(round(start * SAMPLE_RATE))
        out[speaker, at:at + len(speech)] += speech
    return np.clip(out, -1, 1), placed


def render_caller(lines: tuple[str, ...], voices: DemoVoices, speaker: int = 1, gap_s: float = CALLER_GAP_S):
    """The caller's side of a scripted call: a mono 16 kHz signal, each line followed by `gap_s`."""
    parts = [np.zeros(int(LEAD_S * SAMPLE_RATE), dtype=np.float32)]
    for text in lines:
        parts += [voices.speak(speaker, text), np.zeros(int(gap_s * SAMPLE_RATE), dtype=np.float32)]
    return np.concatenate(parts)


def write_wav(path: Path, samples: np.ndarray) -> Path:
    """16-bit WAV; `samples` (channels, n) or mono (n,)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    soundfile.write(str(path), samples.T if samples.ndim == 2 else samples, SAMPLE_RATE, subtype="PCM_16")
    return path

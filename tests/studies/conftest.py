"""Fixtures for the participant-area tests: a real SQLite database and espeak-ng speech."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
import soundfile

from storage.db import init_db, make_engine


@pytest.fixture
def engine(tmp_path):
    engine = make_engine(f"sqlite:///{tmp_path / 'studies.db'}")
    init_db(engine)
    yield engine
    engine.dispose()


def espeak_16k(text: str, path: Path) -> np.ndarray:
    """Speak `text` with espeak-ng, resample with sox to 16 kHz mono; returns float32 samples."""
    raw = path.with_suffix(".raw.wav")
    subprocess.run(["espeak-ng", "-v", "en-us", "-w", str(raw), text], check=True)
    subprocess.run(["sox", str(raw), "-r", "16000", "-c", "1", str(path)], check=True)
    raw.unlink()
    samples, rate = soundfile.read(str(path), dtype="float32")
    assert rate == 16000
    return samples


def speech_onset(samples: np.ndarray, threshold: float = 0.01) -> int:
    """Index of the first sample louder than `threshold` (espeak output starts from digital silence)."""
    loud = np.flatnonzero(np.abs(samples) > threshold)
    return int(loud[0]) if len(loud) else -1


# The cascade's models (the `cascade_components` fixture) are shared by every folder: tests/conftest.py.


def scripted_user(tmp_path: Path, lines: list[str], lead_s: float = 1.0, gap_s: float = 5.0):
    """A WAV of espeak-ng utterances separated by silence; returns (path, [(start_s, end_s)])
    with the exact times of the audible speech of each utterance."""
    rate = 16000
    parts = [np.zeros(int(lead_s * rate), dtype=np.float32)]
    times = []
    position = len(parts[0])
    for k, line in enumerate(lines):
        speech = espeak_16k(line, tmp_path / f"line{k}.wav")
        loud = np.flatnonzero(np.abs(speech) > 0.01)
        times.append(((position + loud[0]) / rate, (position + loud[-1] + 1) / rate))
        parts += [speech, np.zeros(int(gap_s * rate), dtype=np.float32)]
        position += len(speech) + int(gap_s * rate)
    path = tmp_path / "user.wav"
    soundfile.write(str(path), np.concatenate(parts), rate)
    return path, times

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

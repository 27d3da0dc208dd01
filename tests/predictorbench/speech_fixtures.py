"""Real espeak-ng speech placed at known times, for the eot-bench and SID-bench tests."""

from __future__ import annotations

import subprocess
from functools import lru_cache
from pathlib import Path
import tempfile

import numpy as np
import soundfile

SR = 16000


@lru_cache(maxsize=None)
def phrase(text: str) -> np.ndarray:
    """`text` spoken by espeak-ng (en-us), resampled by sox to 16 kHz mono, edges trimmed to speech."""
    with tempfile.TemporaryDirectory() as tmp:
        raw, out = Path(tmp) / "raw.wav", Path(tmp) / "out.wav"
        subprocess.run(["espeak-ng", "-v", "en-us", "-w", str(raw), text], check=True)
        subprocess.run(["sox", str(raw), "-r", str(SR), "-c", "1", str(out)], check=True)
        audio, _ = soundfile.read(out, dtype="float32")
    loud = np.flatnonzero(np.abs(audio) > 0.02 * np.abs(audio).max())
    return audio[loud[0]: loud[-1] + 1].copy()


def place(parts, total_s: float | None = None):
    """Concatenate [(text, silence_after_s), ...] starting with `lead_s` of silence.

    Returns (audio, [(speech_start, speech_end), ...]) with exact times in seconds."""
    pieces, segments, t = [], [], 0.0
    for item in parts:
        if isinstance(item, float):  # leading or extra silence
            pieces.append(np.zeros(int(round(item * SR)), dtype=np.float32))
            t += item
            continue
        text, after = item
        speech = phrase(text)
        segments.append((t, t + len(speech) / SR))
        pieces += [speech, np.zeros(int(round(after * SR)), dtype=np.float32)]
        t = segments[-1][1] + round(after * SR) / SR
    audio = np.concatenate(pieces)
    if total_s is not None:
        audio = np.pad(audio, (0, max(0, int(round(total_s * SR)) - len(audio))))
    return audio, segments


def wav_bytes(audio: np.ndarray) -> bytes:
    import io

    buf = io.BytesIO()
    soundfile.write(buf, audio, SR, format="WAV", subtype="PCM_16")
    return buf.getvalue()

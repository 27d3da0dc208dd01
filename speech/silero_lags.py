"""Where Silero (TurnNat's settings, `speech.silero`) puts a stretch of speech against where the
speech is, by the channel's noise level, and each channel's lags estimated from its recording.

Silero starts speech a little early (its 40 ms padding less its detection delay) and ends it late
(the padding plus the speech probability's decay), later the noisier the channel: on rendered
Switchboard training conversations the end lags by a median 82 ms on clean speech, 141 ms with
white noise 15 dB below the speech and 164 ms at 10 dB. A channel's noise level is estimated from the
recording itself (its speech against its samples well away from speech), and its lags read off
`LAGS_BY_SNR`; session statistics move the channel's boundaries back by them.
Fitted by `python -m analysis pipeline-bias --fit` (docs/pipeline-bias.md).
"""

from __future__ import annotations

import numpy as np

from turntaking.boundary_lags import BoundaryLags

CLEAN_SNR_DB = 60.0  # a channel with no measurable noise
# (speech-to-noise ratio dB, median onset lag s, median offset lag s), by rising ratio.
LAGS_BY_SNR = (
    (9.8, -0.0419, 0.1639),
    (14.5, -0.0409, 0.1414),
    (19.5, -0.0388, 0.1238),
    (24.5, -0.037, 0.1175),
    (34.6, -0.035, 0.1035),
    (CLEAN_SNR_DB, -0.0335, 0.0824),
)
BOUNDARY_LAGS = BoundaryLags(LAGS_BY_SNR[-1][1], LAGS_BY_SNR[-1][2])  # clean speech's
CORRECTION = "Silero's boundary lags undone at each channel's noise level"
AWAY_FROM_SPEECH_S = 0.3  # noise is measured this far from any speech of the channel
MIN_NOISE_S = 0.5  # less silence than this: the channel's noise cannot be told, taken as clean


def channel_snr_db(signal: np.ndarray, speech, sample_rate: int) -> float:
    """The channel's speech-to-noise ratio (dB): RMS inside its speech segments against RMS of its
    samples at least `AWAY_FROM_SPEECH_S` from any; `CLEAN_SNR_DB` at most.

    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(0, 0.01, 16000 * 4).astype(np.float32)
    >>> x[16000:32000] += 0.1 * np.sin(np.arange(16000) / 5.0).astype(np.float32)
    >>> round(channel_snr_db(x, [(1.0, 2.0)], 16000))
    17
    """
    near = np.zeros(len(signal), dtype=bool)
    inside = np.zeros(len(signal), dtype=bool)
    for start, end in speech:
        near[max(0, int((start - AWAY_FROM_SPEECH_S) * sample_rate)):int((end + AWAY_FROM_SPEECH_S) * sample_rate)] = True
        inside[int(start * sample_rate):int(end * sample_rate)] = True
    noise, voiced = signal[~near].astype(np.float64), signal[inside].astype(np.float64)
    if len(noise) < MIN_NOISE_S * sample_rate or not len(voiced):
        return CLEAN_SNR_DB
    noise_rms, speech_rms = np.sqrt(np.mean(noise ** 2)), np.sqrt(np.mean(voiced ** 2))
    if noise_rms <= speech_rms * 10 ** (-CLEAN_SNR_DB / 20):
        return CLEAN_SNR_DB
    return float(20 * np.log10(speech_rms / noise_rms))


def lags_at(snr_db: float) -> BoundaryLags:
    """Silero's lags at a speech-to-noise ratio, interpolated in `LAGS_BY_SNR` (held at its ends).

    >>> lags_at(60.0) == BOUNDARY_LAGS, lags_at(14.5).offset_s, lags_at(5.0).offset_s
    (True, 0.1414, 0.1639)
    """
    snr, onset, offset = (np.array(column) for column in zip(*LAGS_BY_SNR))
    return BoundaryLags(round(float(np.interp(snr_db, snr, onset)), 4), round(float(np.interp(snr_db, snr, offset)), 4))


def channel_lags(samples: np.ndarray, sample_rate: int, activity) -> list[list[float]]:
    """[[onset_s, offset_s], ...] for each channel of (channels, n) `samples` with its speech
    segments `activity` (the form `turntaking.boundary_lags.lags_of` reads from a conversation)."""
    out = []
    for signal, speech in zip(samples, activity):
        lags = lags_at(channel_snr_db(signal, speech, sample_rate))
        out.append([lags.onset_s, lags.offset_s])
    return out

"""Each channel's voice-detector lags, read off its own noise level: two channels of the same
espeak-ng sentences at known times, one clean and one with white noise 15 dB below the speech,
through the session pipeline's loader (Silero, no ASR)."""

import numpy as np
import pytest

from speech.pipeline import load_conversation
from speech.silero_lags import BOUNDARY_LAGS, CLEAN_SNR_DB, channel_snr_db, lags_at
from tests.rendered_speech import SAMPLE_RATE, Utterance, render_speech
from turntaking.boundary_lags import corrected, lags_of

TEXTS = ("we walked along the river until it got dark", "then we found a small place to eat",
         "the soup was good and the bread was warm")


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    plan = [Utterance(k, 1.0 + 4.0 * i, text, "en-us") for i, text in enumerate(TEXTS) for k in (0, 1)]
    speech = render_speech(plan, duration=14.0)
    rng = np.random.default_rng(7)
    voiced = speech.samples[1][np.abs(speech.samples[1]) > 1e-3]
    rms = float(np.sqrt(np.mean(voiced.astype(np.float64) ** 2)))
    speech.samples[1] += rng.normal(0, rms / 10 ** (15 / 20), speech.samples.shape[1]).astype(np.float32)
    path = speech.write(tmp_path_factory.mktemp("audio") / "lags.wav")
    return speech, load_conversation(path, vad="silero", transcribe=False)


def test_the_noisy_channel_gets_the_larger_lags(recording):
    speech, conv = recording
    clean, noisy = lags_of(conv)
    assert clean == BOUNDARY_LAGS
    assert channel_snr_db(speech.samples[0], conv.activity[0], SAMPLE_RATE) == CLEAN_SNR_DB
    assert 12 <= channel_snr_db(speech.samples[1], conv.activity[1], SAMPLE_RATE) <= 18
    assert noisy.offset_s > clean.offset_s + 0.03
    assert noisy == lags_at(channel_snr_db(speech.samples[1], conv.activity[1], SAMPLE_RATE))


def test_corrected_ends_come_nearer_the_speech_on_both_channels(recording):
    speech, conv = recording
    fixed = corrected(conv, lags_of(conv))
    for k in (0, 1):
        true_ends = [u.end for u in speech.in_channel(k)]
        before = [min(abs(e - t) for _, e in conv.activity[k]) for t in true_ends]
        after = [min(abs(e - t) for _, e in fixed.activity[k]) for t in true_ends]
        assert np.mean(after) < np.mean(before), (k, before, after)
        assert max(after) < 0.08

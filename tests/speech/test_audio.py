"""Loading recordings: formats, resampling, and one-line errors for bad files."""

import numpy as np
import pytest
import soundfile

from speech.audio import AudioError, load_audio, mono_mixture, resample
from tests.rendered_speech import SAMPLE_RATE, Utterance, render_speech


def onset(signal, rate, level=0.01):
    return np.flatnonzero(np.abs(signal) > level)[0] / rate


def test_two_channel_wav_loads_as_written(dialogue, dialogue_wav):
    samples, rate = load_audio(dialogue_wav, require_channels=2)
    assert rate == SAMPLE_RATE
    assert samples.dtype == np.float32
    assert samples.shape == dialogue.samples.shape
    # 16-bit PCM: within one quantisation step.
    assert np.abs(samples - dialogue.samples).max() <= 1 / 32768 + 1e-7


@pytest.mark.parametrize("fmt,rate", [("flac", 44100), ("ogg", 48000), ("wav", 8000), ("wav", 22050)])
def test_other_formats_and_rates_are_resampled_to_16k(tmp_path, fmt, rate):
    speech = render_speech([Utterance(0, 0.7, "hello there"), Utterance(1, 1.9, "good morning")], duration=3.5)
    original = resample(speech.samples, SAMPLE_RATE, rate)
    path = tmp_path / f"x.{fmt}"
    soundfile.write(str(path), original.T, rate, format=fmt.upper(), **({"subtype": "VORBIS"} if fmt == "ogg" else {}))
    samples, got_rate = load_audio(path)
    assert got_rate == SAMPLE_RATE
    assert samples.shape == (2, round(original.shape[1] * SAMPLE_RATE / rate))
    # The speech is still where it was (8 kHz loses the high band, hence the loose level).
    assert onset(samples[0], SAMPLE_RATE) == pytest.approx(0.7, abs=0.01)
    assert onset(samples[1], SAMPLE_RATE) == pytest.approx(1.9, abs=0.01)


def test_native_rate_kept_when_asked(tmp_path):
    path = tmp_path / "tone.wav"
    soundfile.write(str(path), np.zeros((441, 1), dtype=np.float32), 44100)
    samples, rate = load_audio(path, sample_rate=None)
    assert (samples.shape, rate) == ((1, 441), 44100)


def test_mono_mixture_averages_channels():
    x = np.array([[1.0, 0.0, 0.5], [0.0, 1.0, 0.5]], dtype=np.float32)
    assert mono_mixture(x).tolist() == [0.5, 0.5, 0.5]
    assert mono_mixture(x[:1]).tolist() == [1.0, 0.0, 0.5]


def _error(path, **kw) -> str:
    with pytest.raises(AudioError) as info:
        load_audio(path, **kw)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_missing_file(tmp_path):
    assert _error(tmp_path / "nope.wav") == f"audio file not found: {tmp_path / 'nope.wav'}"


def test_directory(tmp_path):
    assert _error(tmp_path) == f"{tmp_path} is a directory, not an audio file"


def test_corrupt_and_wrong_format(tmp_path):
    corrupt = tmp_path / "broken.wav"
    corrupt.write_bytes(b"RIFF\x24\x00\x00\x00WAVEfmt garbage that is not a header")
    message = _error(corrupt)
    assert message.startswith(f"cannot read {corrupt} as audio (WAV/FLAC/OGG): ")
    text = tmp_path / "notes.flac"
    text.write_text("these are my notes, not audio\n")
    message = _error(text)
    assert message.startswith(f"cannot read {text} as audio (WAV/FLAC/OGG): ")
    assert "Format not recognised" in message  # what soundfile said


def test_empty_recording(tmp_path):
    path = tmp_path / "empty.wav"
    soundfile.write(str(path), np.zeros((0, 2), dtype=np.float32), SAMPLE_RATE)
    assert _error(path) == f"{path} is an empty recording (0 samples)"


def test_mono_where_two_channels_are_needed(tmp_path):
    path = tmp_path / "mono.wav"
    soundfile.write(str(path), np.zeros(1600, dtype=np.float32), SAMPLE_RATE)
    assert _error(path, require_channels=2) == (
        f"{path} has 1 channel; two-channel audio with one speaker per channel is needed "
        "(or use a mono mixture with --vad pyannote-onnx or an RTTM)"
    )
    three = tmp_path / "three.wav"
    soundfile.write(str(three), np.zeros((1600, 3), dtype=np.float32), SAMPLE_RATE)
    assert _error(three, require_channels=2).startswith(f"{three} has 3 channels; two-channel audio")

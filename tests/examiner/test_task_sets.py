"""Task sets from the packaged voices: the times written in FDB's files are where the sound is
(within 20 ms, measured on the written input.wav), and a seed gives the same set again."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile

from examiner.task_sets import UNSEEN_QUESTIONS_FILE, read_questions
from tests.command_line import run_cli

TOLERANCE_S = 0.02
AUDIBLE = 0.01


@pytest.fixture(scope="module")
def task_set(tmp_path_factory):
    out = tmp_path_factory.mktemp("tasks") / "set"
    done = run_cli("examiner", "make-tasks", out, "--tasks",
                   "pause_handling,smooth_turn_taking,user_interruption,noise_burst,background_speech",
                   "--per-task", "2", "--seed", "1", "--json")
    assert done.returncode == 0, done.stderr
    return out


def audio(folder):
    samples, rate = soundfile.read(str(folder / "input.wav"), dtype="float32")
    assert rate == 16000 and samples.ndim == 1
    return samples


def loud(samples, start, end):
    a, b = int(round(start * 16000)), int(round(end * 16000))
    return float(np.abs(samples[max(a, 0):b]).max()) if b > a else 0.0


def assert_sound_between(samples, start, end):
    """Silence just before `start` and just after `end`, sound just after `start` and before `end`."""
    assert loud(samples, start - TOLERANCE_S, start - 0.001) < AUDIBLE
    assert loud(samples, start, start + TOLERANCE_S) >= AUDIBLE
    assert loud(samples, end - TOLERANCE_S, end) >= AUDIBLE
    assert loud(samples, end + 0.001, end + TOLERANCE_S) < AUDIBLE


def test_the_pause_is_where_pause_json_says(task_set):
    for k in (0, 1):
        folder = task_set / "pause_handling" / str(k)
        samples = audio(folder)
        start, end = json.loads((folder / "pause.json").read_text())[0]["timestamp"]
        assert 1.0 - TOLERANCE_S <= end - start <= 2.0 + TOLERANCE_S
        assert loud(samples, start + 0.001, end - 0.001) < AUDIBLE  # silent throughout
        assert loud(samples, start - TOLERANCE_S, start) >= AUDIBLE and loud(samples, end, end + TOLERANCE_S) >= AUDIBLE
        facts = json.loads((folder / "example.json").read_text())
        assert_sound_between(samples, facts["speech"][1][0], facts["turn_end"])


def test_the_turn_end_is_where_turn_taking_json_says(task_set):
    for k in (0, 1):
        folder = task_set / "smooth_turn_taking" / str(k)
        samples = audio(folder)
        end = json.loads((folder / "turn_taking.json").read_text())[0]["timestamp"][0]
        assert_sound_between(samples, 0.5, end)
        assert loud(samples, end + 0.001, len(samples) / 16000) < AUDIBLE  # nothing after the question


def test_the_interruption_and_other_events_are_where_their_files_say(task_set):
    for k in (0, 1):
        folder = task_set / "user_interruption" / str(k)
        samples = audio(folder)
        start, end = json.loads((folder / "interrupt.json").read_text())[0]["timestamp"]
        assert_sound_between(samples, start, end)
        facts = json.loads((folder / "example.json").read_text())
        assert facts["schedule"]["assumed_system_onset_s"] + facts["schedule"]["after_system_onset_s"] == \
            pytest.approx(start, abs=1e-3)
        # The event's own file is the same sound: the runner re-places it on the system's onset.
        event, _ = soundfile.read(str(folder / "event.wav"), dtype="float32")
        assert abs(len(event) / 16000 - (end - start)) < 1e-3
    for task in ("noise_burst", "background_speech"):
        folder = task_set / task / "0"
        start, end = json.loads((folder / "metadata.json").read_text())["timestamps"]
        assert_sound_between(audio(folder), start, end)


def test_two_engines_speak_and_the_seed_gives_the_same_set(task_set, tmp_path):
    voices = {json.loads((task_set / t / str(k) / "example.json").read_text())["voice"]
              for t in ("pause_handling", "smooth_turn_taking") for k in (0, 1)}
    assert {v.split(":")[0] for v in voices} == {"piper", "espeak-ng"}
    again = tmp_path / "again"
    assert run_cli("examiner", "make-tasks", again, "--tasks", "pause_handling,noise_burst", "--per-task", "2",
                   "--seed", "1").returncode == 0
    for task in ("pause_handling", "noise_burst"):
        for k in (0, 1):
            wav = Path(task) / str(k) / "input.wav"
            assert (again / wav).read_bytes() == (task_set / wav).read_bytes()
    other = tmp_path / "other"
    assert run_cli("examiner", "make-tasks", other, "--tasks", "pause_handling", "--per-task", "2",
                   "--seed", "2").returncode == 0
    assert (other / "pause_handling" / "0" / "input.wav").read_bytes() != \
        (task_set / "pause_handling" / "0" / "input.wav").read_bytes()


def test_the_monologue_reference_puts_its_mass_in_the_pauses(tmp_path):
    out = tmp_path / "bc"
    done = run_cli("examiner", "make-tasks", out, "--tasks", "backchannel", "--per-task", "1", "--seed", "1")
    assert done.returncode == 0
    folder = out / "backchannel" / "0"
    facts = json.loads((folder / "example.json").read_text())
    samples = audio(folder)
    assert 30 <= facts["turn_end"] <= 60 + 8
    for start, end in facts["pauses"]:
        assert 0.4 - TOLERANCE_S <= end - start <= 1.2 + TOLERANCE_S
        assert loud(samples, start + 0.001, end - 0.001) < AUDIBLE
    histogram = np.array(json.loads((folder / "backchannel_reference.json").read_text())["histogram"])
    assert histogram.sum() == pytest.approx(1.0)
    in_pause = np.zeros(len(histogram), dtype=bool)
    for start, end in facts["pauses"]:
        in_pause[int(start / 0.2):int(end / 0.2) + 1] = True
    assert histogram[~in_pause].sum() == 0


def test_bad_task_names_are_one_line(tmp_path):
    done = run_cli("examiner", "make-tasks", tmp_path / "x", "--tasks", "pause_handling,chitchat")
    assert done.returncode == 2 and done.stderr.strip().startswith("error: unknown task(s) chitchat")


def test_smooth_turn_taking_asks_the_questions_of_a_file(tmp_path):
    unseen = read_questions(UNSEEN_QUESTIONS_FILE)
    assert len(unseen) == 12 and all(q.endswith(("?", ".")) for q in unseen)
    done = run_cli("examiner", "make-tasks", tmp_path / "set", "--tasks", "smooth_turn_taking", "--per-task", "3",
                   "--seed", "21", "--questions", UNSEEN_QUESTIONS_FILE, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "set" / "manifest.json").read_text())["questions"] == list(unseen)
    for k in range(3):
        facts = json.loads((tmp_path / "set" / "smooth_turn_taking" / str(k) / "example.json").read_text())
        assert facts["text"] in unseen
        assert_sound_between(audio(tmp_path / "set" / "smooth_turn_taking" / str(k)), *facts["speech"][0])
    (tmp_path / "empty.txt").write_text("# nothing but a comment\n\n")
    for bad in (tmp_path / "empty.txt", tmp_path / "missing.txt"):
        done = run_cli("examiner", "make-tasks", tmp_path / "x", "--questions", bad)
        assert done.returncode == 2 and done.stderr.strip().startswith(f"error: --questions {bad}")
        assert len(done.stderr.strip().splitlines()) == 1

"""`python -m examiner run` against the embedded cascade, end to end: real calls in real time on
the headless call path, FDB's layout written sample-aligned, the interruption placed on the
system's speech onset, the scores, a second run that resumes without calling again, and a final
run of the test set kept in its ledger."""

from __future__ import annotations

import json
import shutil
import time

import numpy as np
import pytest
import soundfile

from storage.db import make_engine, session_scope
from storage.records import examiner_examples, examiner_runs
from tests.command_line import one_line_error, run_cli

TASKS = "smooth_turn_taking,user_interruption"
AUDIBLE = 0.01


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("examiner")
    done = run_cli("examiner", "make-tasks", root / "set", "--tasks", TASKS, "--per-task", "1", "--seed", "0")
    assert done.returncode == 0, done.stderr
    done = run_cli("examiner", "run", "--system", "cascaded", "--tasks", TASKS, "--set", root / "set",
                   "--out", root / "run", "--json")
    assert done.returncode == 0, done.stderr
    return root, json.loads(done.stdout)


def read(path):
    samples, rate = soundfile.read(str(path), dtype="float32")
    assert rate == 16000
    return samples


def first_audible(samples, after_s=0.0):
    loud = np.flatnonzero(np.abs(samples[int(after_s * 16000):]) > AUDIBLE)
    return None if not len(loud) else after_s + loud[0] / 16000


def test_each_call_is_written_in_fdbs_layout_sample_aligned(run):
    root, report = run
    assert report["calls"] == 2 and report["system"] == "cascaded"
    for task, annotation in (("smooth_turn_taking", "turn_taking.json"), ("user_interruption", "interrupt.json")):
        folder = root / "run" / task / "0"
        heard, said = read(folder / "input.wav"), read(folder / "output.wav")
        assert len(heard) == len(said)
        assert (folder / annotation).exists() and (folder / "output.json").exists()
    # A fixed input is played as it is: the recording's user channel is the task's input.wav.
    given = read(root / "set" / "smooth_turn_taking" / "0" / "input.wav")
    heard = read(root / "run" / "smooth_turn_taking" / "0" / "input.wav")
    assert len(heard) == len(given) and np.max(np.abs(heard - given)) < 1e-4


def test_the_interruption_follows_the_systems_onset_and_its_file_says_where_it_was(run):
    root, _ = run
    folder = root / "run" / "user_interruption" / "0"
    call = json.loads((folder / "call.json").read_text())
    facts = json.loads((folder / "example.json").read_text())
    start, end = json.loads((folder / "interrupt.json").read_text())[0]["timestamp"]
    heard = read(folder / "input.wav")
    # The event's sound is where interrupt.json says (within 20 ms).
    assert abs(first_audible(heard, facts["turn_end"] + 0.05) - start) <= 0.02
    assert call["event"] == [start, end]
    if call["onset_heard"]:  # the event came `after_system_onset_s` after the system's answer began
        onset = call["system_onset_s"]
        assert start - onset == pytest.approx(facts["schedule"]["after_system_onset_s"], abs=0.021)
        said = read(folder / "output.wav")
        assert np.abs(said[int(onset * 16000):int((onset + 0.05) * 16000)]).max() >= AUDIBLE
    else:  # a system silent for ONSET_WAIT_S gets the event then
        assert start == pytest.approx(facts["turn_end"] + 10.0, abs=0.021)


def test_the_scores_agree_with_the_audio(run):
    root, report = run
    smooth = report["scores"]["smooth_turn_taking"]["fdb"]
    row = smooth["rows"][0]
    assert report["table"]["smooth_tor"] == smooth["tor"] == row["tor"]
    said = read(root / "run" / "smooth_turn_taking" / "0" / "output.wav")
    onset = first_audible(said, row["user_end_s"])
    if row["tor"] == 1:  # the latency is the first word's start after the question: where the sound starts
        assert abs(row["latency_s"] - max(0.0, onset - row["user_end_s"])) <= 0.2
    else:
        assert row["latency_s"] is None
    assert report["table"]["interruption_judge"] is None
    # the answer read for its relevance is FDB's words of the output, to the example's own question
    replies = report["scores"]["smooth_turn_taking"]["replies"]
    facts = json.loads((root / "set" / "smooth_turn_taking" / "0" / "example.json").read_text())
    words = json.loads((root / "run" / "smooth_turn_taking" / "0" / "output.json").read_text())["text"]
    assert replies["rows"][0]["question"] == facts["text"] and replies["rows"][0]["answer"] == words.strip()
    assert replies["rows"][0]["relevance"] is None  # one question: nothing to contrast its answer with
    assert report["table"]["reply_apology_or_disclaimer_rate"] == replies["apology_or_disclaimer_rate"]
    probe = report["scores"]["user_interruption"]["overlap"]
    assert probe["examples"] == 1 and set(probe["rows"][0]) >= {"speaking", "stop_time_s", "stopped", "overlap_s"}


def test_a_second_run_resumes_without_calling_again(run):
    root, report = run
    marks = {p: p.stat().st_mtime for p in (root / "run").rglob("call.json")}
    began = time.monotonic()
    done = run_cli("examiner", "run", "--system", "cascaded", "--tasks", TASKS, "--set", root / "set",
                   "--out", root / "run", "--json")
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - began < 20  # no model loads, no calls: scoring only
    assert {p: p.stat().st_mtime for p in (root / "run").rglob("call.json")} == marks
    assert json.loads(done.stdout)["table"] == report["table"]


def test_the_scores_are_stored_per_system(run, tmp_path):
    root, report = run
    url = f"sqlite:///{tmp_path / 'examiner.db'}"
    for _ in range(2):  # storing the same system's run on the same set again replaces its row
        done = run_cli("examiner", "run", "--system", "cascaded", "--tasks", TASKS, "--set", root / "set",
                       "--out", root / "run", "--store", "--url", url, "--json")
        assert done.returncode == 0, done.stderr
    engine = make_engine(url)
    with session_scope(engine) as session:
        rows = examiner_runs(session, "cascaded")
        assert len(rows) == 1 and rows[0].id == json.loads(done.stdout)["stored"]["examiner_run_id"]
        assert rows[0].summary == report["table"] and rows[0].calls == 2
        assert rows[0].task_set["seed"] == 0 and rows[0].scores["smooth_turn_taking"]["fdb"]["rows"]
        # every call's timeline, stored with it: the interruption where it was played
        examples = {e.task: e.timeline for e in examiner_examples(session, rows[0].id)}
        assert set(examples) == set(TASKS.split(","))
        call = json.loads((root / "run" / "user_interruption" / "0" / "call.json").read_text())
        assert examples["user_interruption"]["marks"]["event"] == call["event"]
    engine.dispose()


def test_a_final_run_of_the_test_set_is_kept_in_the_ledger_with_its_figures(run, tmp_path):
    root, report = run
    # This module's set, marked as the test set (its calls are done: the run resumes and is scored).
    test_set = tmp_path / "set"
    shutil.copytree(root / "set", test_set)
    manifest = json.loads((test_set / "manifest.json").read_text())
    (test_set / "manifest.json").write_text(json.dumps({**manifest, "voice_set": "test", "question_set": "test"}))
    ledger = tmp_path / "ledger.jsonl"
    args = ("examiner", "run", "--system", "cascaded", "--tasks", TASKS, "--set", test_set, "--out", root / "run")
    done = run_cli(*args, "--final", "--json", env={"EXAMINER_TEST_SET_LEDGER": str(ledger)})
    assert done.returncode == 0, done.stderr
    (entry,) = [json.loads(line) for line in ledger.read_text().splitlines()]
    assert entry == json.loads(done.stdout)["test_set_record"]
    assert entry["kind"] == "cascaded" and entry["figures"] == report["table"] and entry["calls"] == 2
    again = run_cli(*args, "--final", env={"EXAMINER_TEST_SET_LEDGER": str(ledger)})
    one_line_error(again, "already ran cascaded", "--again")
    assert len(ledger.read_text().splitlines()) == 1

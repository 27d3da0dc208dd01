"""The fitting / choosing / test discipline: named voice and question sets for each use, and a test
set that `examiner run` refuses unless the settings are final, and then only once per system kind
unless told why; every final run is kept in the ledger with its commit."""

from __future__ import annotations

import json

import pytest

from analysis.switchboard_renderings import VOICE_PAIRS
from examiner.task_sets import QUESTIONS, QUESTION_SETS, question_set, read_questions
from examiner.test_set import LEDGER, TestSetError, check_test_run, ledger_runs, record_test_run
from examiner.voices import VOICE_SETS
from tests.command_line import one_line_error, run_cli


def test_the_test_voices_and_questions_are_in_no_other_set():
    test = set(VOICE_SETS["test"].voices)
    for name in ("fitting", "choosing"):
        others = VOICE_SETS[name].voices
        assert not test & set(others)
        # not even the same espeak-ng voice at another rate
        assert not {v.speaker for v in test if v.engine == "espeak-ng"} & {v.speaker for v in others}
    rendered = {v for pair in VOICE_PAIRS.values() for v in pair.voices}
    assert not test & rendered
    asked = {q.lower() for q in question_set("test")[1]}
    assert len(asked) >= 24
    assert not asked & {q.lower() for q in QUESTIONS}
    assert not asked & {q.lower() for q in question_set("choosing")[1]}
    assert question_set("fitting") == ("fitting", QUESTIONS)
    assert question_set("choosing")[1] == read_questions(QUESTION_SETS["choosing"])
    assert VOICE_SETS["choosing"].voices == VOICE_SETS["held-out"].voices  # its earlier name makes the same sets


def test_a_test_set_says_so_in_its_manifest_and_is_refused_unless_final(tmp_path):
    out = tmp_path / "set"
    done = run_cli("examiner", "make-tasks", out, "--tasks", "smooth_turn_taking", "--per-task", "2",
                   "--voices", "test", "--questions", "test", "--seed", "3")
    assert done.returncode == 0, done.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["voice_set"] == "test" and manifest["question_set"] == "test"
    facts = [json.loads((out / "smooth_turn_taking" / str(k) / "example.json").read_text()) for k in range(2)]
    assert all(f["voice"] in {v.label for v in VOICE_SETS["test"].voices} for f in facts)
    assert set(manifest["questions"]) == set(question_set("test")[1])
    # refused before any call: nothing is written to the run folder
    refused = run_cli("examiner", "run", "--system", "cascaded", "--tasks", "smooth_turn_taking", "--set", out,
                      "--out", tmp_path / "run")
    one_line_error(refused, "test set", "--final")
    assert not (tmp_path / "run").exists()
    # and a choosing set is no test set: --final there is a mistake
    choosing = tmp_path / "choosing"
    assert run_cli("examiner", "make-tasks", choosing, "--tasks", "pause_handling", "--per-task", "1",
                   "--voices", "choosing").returncode == 0
    refused = run_cli("examiner", "run", "--system", "cascaded", "--tasks", "pause_handling", "--set", choosing,
                      "--out", tmp_path / "run", "--final")
    one_line_error(refused, "--final", "test set")


REPORT = {"kind": "predictive", "system": "predictive", "config": {}, "calls": 2, "table": {"smooth_tor": 1.0}}
MANIFEST = {"voice_set": "test", "question_set": "test", "seed": 3, "tasks": ["smooth_turn_taking"], "per_task": 2}


def test_the_test_set_runs_once_per_system_kind_and_each_run_is_kept_with_its_commit(tmp_path):
    ledger = tmp_path / "ledger.jsonl"
    with pytest.raises(TestSetError, match="--final"):
        check_test_run(MANIFEST, "predictive", final=False, again=None, ledger=ledger)
    check_test_run(MANIFEST, "predictive", final=True, again=None, ledger=ledger)  # the first: allowed
    entry = record_test_run(REPORT, MANIFEST, None, ledger=ledger)
    commit = entry["commit"].removesuffix("+dirty")
    assert len(commit) == 40 and int(commit, 16) >= 0
    assert entry["figures"] == {"smooth_tor": 1.0} and entry["voice_set"] == "test" and entry["again"] is None
    with pytest.raises(TestSetError, match="--again"):
        check_test_run(MANIFEST, "predictive", final=True, again=None, ledger=ledger)
    with pytest.raises(TestSetError, match="--again"):
        check_test_run(MANIFEST, "predictive", final=True, again="  ", ledger=ledger)
    check_test_run(MANIFEST, "cascaded", final=True, again=None, ledger=ledger)  # another kind's first run
    check_test_run(MANIFEST, "predictive", final=True, again="the recogniser changed", ledger=ledger)
    record_test_run(REPORT, MANIFEST, "the recogniser changed", ledger=ledger)
    assert [run["again"] for run in ledger_runs(ledger)] == [None, "the recogniser changed"]


def test_the_committed_ledger_holds_only_final_runs_of_the_test_set():
    for run in ledger_runs(LEDGER):
        assert run["voice_set"].startswith("test") or run["question_set"] == "test"
        assert len(run["commit"].removesuffix("+dirty")) == 40

"""`python -m examiner compare`: two runs on one task set paired example by example. Two run
folders hold the same espeak-ng questions and the answers placed at known delays, the second run's
0.15 s later on each; `python -m examiner run` scores them (it resumes without calling) and the
comparison must find the 0.15 s with an interval that excludes 0, each run's mean latency and its
late answers as placed, and refuse runs it cannot pair."""

from __future__ import annotations

import json

import pytest

from examiner.paired_runs import examples_for_change
from tests.command_line import run_cli
from tests.examiner.recorded_run import output_words_json
from tests.rendered_speech import Utterance, render_speech

QUESTIONS = ("what time is it now", "where is the station", "how far is the lake", "who wrote this book",
             "when does the shop open", "why is the sky blue", "what is your name", "which bus goes north")
# The first run's answers after each question: none within 0.07 s of 0.6 s in either run
DELAYS_S = (0.25, 0.35, 0.30, 0.38, 0.52, 0.20, 0.75, 0.28)
LATER_S = 0.15  # the second run's answers come this much later
DURATION_S = 6.0


def _write(path, utterance: Utterance) -> list:
    speech = render_speech([utterance], DURATION_S, channels=1)
    speech.write(path)
    return speech.utterances


def heard(question: str, later_s: float) -> list[str]:
    """The transcripts a call logs: the first run hears the question right (its last transcript
    after a partial one), the second its last word wrong, and nothing of the last question."""
    if not later_s:
        return [" ".join(question.split()[:2]) + ".", question.capitalize() + "?"]
    return [] if question == QUESTIONS[-1] else [" ".join(question.split()[:-1] + ["no"])]


def write_run(task_set, run, later_s: float) -> list[float]:
    """A smooth turn-taking run folder; the latencies placed (the answer's first sound less the question's end)."""
    placed = []
    for k, (question, delay) in enumerate(zip(QUESTIONS, DELAYS_S)):
        out, example = run / "smooth_turn_taking" / str(k), task_set / "smooth_turn_taking" / str(k)
        out.mkdir(parents=True)
        example.mkdir(parents=True, exist_ok=True)
        [asked] = _write(out / "input.wav", Utterance(0, 0.5, question))
        [answer] = _write(out / "output.wav", Utterance(0, asked.end + delay + later_s, "it is about three", "en-us+f3"))
        placed.append(answer.start - asked.end)
        facts = {"task": "smooth_turn_taking", "index": k, "seed": 0, "voice": "espeak-ng en-us",
                 "duration_s": DURATION_S, "text": question, "speech": [[asked.start, asked.end]],
                 "turn_end": asked.end}
        call = {"system": "cascaded", "example": str(example), "duration_s": DURATION_S, "late_blocks": 0,
                "wall_s": DURATION_S}
        (out / "output.json").write_text(json.dumps(output_words_json([answer])))
        (out / "turn_taking.json").write_text(json.dumps([{"text": "[TURN-TAKING]", "timestamp": [asked.end, DURATION_S]}]))
        (out / "example.json").write_text(json.dumps({**facts, "run": call}))
        (out / "call.json").write_text(json.dumps(call))
        (out / "call.jsonl").write_text("".join(json.dumps({"t": asked.end, "event": "transcript", "text": text}) + "\n"
                                                for text in heard(question, later_s)))
        (example / "example.json").write_text(json.dumps(facts))
    return placed


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("paired")
    task_set = root / "set"
    task_set.mkdir()
    (task_set / "manifest.json").write_text(json.dumps({"seed": 0, "tasks": ["smooth_turn_taking"], "per_task": 8}))
    placed = {name: write_run(task_set, root / name, later) for name, later in (("first", 0.0), ("second", LATER_S))}
    for name in placed:  # scored as any run: it resumes, calling nothing
        done = run_cli("examiner", "run", "--tasks", "smooth_turn_taking", "--set", task_set, "--out", root / name)
        assert done.returncode == 0, done.stderr
    return root, placed


def test_the_paired_difference_is_the_delay_added_with_an_interval_that_excludes_zero(runs):
    root, placed = runs
    done = run_cli("examiner", "compare", root / "first", root / "second", "--json")
    assert done.returncode == 0, done.stderr
    task = json.loads(done.stdout)["tasks"]["smooth_turn_taking"]
    first, second, paired = task["first"], task["second"], task["paired"]
    assert first["examples"] == second["examples"] == paired["pairs"] == paired["latency_pairs"] == 8
    # each run's mean latency is that of the answers as placed (FDB's first word, within a frame)
    for name, figures in (("first", first), ("second", second)):
        assert figures["latency_s"] == pytest.approx(sum(placed[name]) / 8, abs=0.03)
        assert figures["latency_ci95"][0] < figures["latency_s"] < figures["latency_ci95"][1]
        assert figures["late_share"] == sum(v > 0.6 for v in placed[name]) / 8
    assert paired["latency_difference_s"] == pytest.approx(LATER_S, abs=0.03)
    low, high = paired["latency_ci95"]
    assert 0 < low <= paired["latency_difference_s"] <= high
    assert paired["tor_difference"] == 0.0 and paired["difference_sd_s"] < 0.05
    # the answer of 0.52 s crosses 0.6 s when 0.15 s later: one of eight more is late
    assert paired["late_difference"] == pytest.approx(1 / 8)
    # as text: each run and the paired line, with the examples a 0.1 s change needs
    text = run_cli("examiner", "compare", root / "first", root / "second").stdout
    assert "paired TOR 0.000" in text and f"needs {paired['examples_for_change']} examples" in text


def test_a_run_against_itself_differs_by_nothing(runs):
    root, _ = runs
    paired = json.loads(run_cli("examiner", "compare", root / "first", root / "first", "--json").stdout)
    paired = paired["tasks"]["smooth_turn_taking"]["paired"]
    assert paired["latency_difference_s"] == 0.0 and paired["latency_ci95"] == [0.0, 0.0]


def test_runs_it_cannot_pair_are_refused_in_one_line(runs, tmp_path):
    root, _ = runs
    done = run_cli("examiner", "compare", root / "first", tmp_path)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "no scores.json" in done.stderr
    # a run made on another task set (its manifest differs)
    other = tmp_path / "other"
    other.mkdir()
    (other / "manifest.json").write_text(json.dumps({"seed": 1, "tasks": ["smooth_turn_taking"], "per_task": 8}))
    scores = json.loads((root / "second" / "scores.json").read_text())
    moved = tmp_path / "moved"
    moved.mkdir()
    (moved / "scores.json").write_text(json.dumps({**scores, "task_set": str(other)}))
    done = run_cli("examiner", "compare", root / "first", moved)
    assert done.returncode == 2 and "different task sets" in done.stderr and done.stderr.count("\n") == 1


def test_the_examples_a_change_needs_grow_with_the_square_of_the_spread():
    # ceil(((z_0.975 + z_0.8) * sd / 0.1)^2): twice the spread, about four times the examples
    assert [examples_for_change(sd) for sd in (0.06, 0.12, 0.24, 0.0)] == [3, 12, 46, 2]


def test_the_word_errors_of_each_runs_final_transcripts_over_the_questions_both_heard(runs):
    root, _ = runs
    report = json.loads(run_cli("examiner", "compare", root / "first", root / "second", "--json").stdout)
    first, second = report["recognition"]["first"], report["recognition"]["second"]
    # the last question has no transcript in the second run: both are scored on the other seven
    words = sum(len(q.split()) for q in QUESTIONS[:-1])
    assert first["calls"] == second["calls"] == 7 and first["words"] == second["words"] == words
    assert first["errors"] == 0 and second["errors"] == 7  # one word a question
    assert second["word_error_rate"] == pytest.approx(7 / words)
    text = run_cli("examiner", "compare", root / "first", root / "second").stdout
    assert f"word error rate first 0.00 % (0 of {words} words), second {100 * 7 / words:.2f} % (7 of {words})" in text


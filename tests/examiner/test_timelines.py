"""Each examined example's timeline (examiner/timelines.py): written next to its call, stored per
example with `--store`, with the task's marks at the known times, the system's words, and where
its score was decided."""

from __future__ import annotations

import json

import pytest

from storage.db import make_engine, session_scope
from storage.records import examiner_examples, examiner_runs
from tests.command_line import run_cli
from tests.examiner.recorded_run import ANSWER, recorded_run

TOLERANCE_S = 0.02  # Silero's segments at 16 kHz; the rendered times are exact


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    root = tmp_path_factory.mktemp("timelines")
    recorded = recorded_run(root)
    url = f"sqlite:///{root / 'examiner.db'}"
    done = run_cli("examiner", "run", "--system", "cascaded", "--tasks", "smooth_turn_taking,user_interruption",
                   "--set", recorded.task_set, "--out", recorded.run, "--store", "--url", url, "--json")
    assert done.returncode == 0, done.stderr
    return recorded, url, json.loads(done.stdout)


def timeline(recorded, task):
    return json.loads((recorded.run / task / "0" / "timeline.json").read_text())


def test_the_timeline_holds_both_channels_the_words_and_the_known_marks(stored):
    recorded, _, _ = stored
    known = recorded.known["smooth_turn_taking"]
    line = timeline(recorded, "smooth_turn_taking")
    assert line["task"] == "smooth_turn_taking" and line["example"] == "0"
    assert line["marks"]["turn_end_s"] == pytest.approx(known["turn_end"], abs=1e-6)
    assert " ".join(w["text"] for w in line["words"]) == ANSWER
    user, system = line["channels"]["user"], line["channels"]["system"]
    assert len(user["min"]) == len(system["max"]) == 400 and max(system["max"]) > 0.1
    # Silero's speech is where the speech was rendered (its segments pad a little)
    assert user["speech"][0][0] == pytest.approx(0.5, abs=0.1)
    assert system["speech"][0][0] == pytest.approx(known["answer"][0], abs=0.1)
    decision = line["decision"]
    assert decision["rule"] == "FDB take-over" and decision["tor"] == 1
    assert decision["turn"][0] == pytest.approx(known["answer"][0], abs=TOLERANCE_S)
    assert decision["latency"] == pytest.approx([known["turn_end"], known["answer"][0]], abs=TOLERANCE_S)


def test_the_interruption_timeline_says_where_the_event_was_and_that_the_system_went_on(stored):
    recorded, _, report = stored
    known = recorded.known["user_interruption"]
    line = timeline(recorded, "user_interruption")
    assert line["marks"]["event"] == pytest.approx(list(known["event"]), abs=1e-6)
    assert line["marks"]["event_name"] == "interruption" and line["marks"]["onset_heard"] is True
    overlap = line["decision"]["overlap"]
    assert overlap["speaking"] is True and overlap["stopped"] is False
    # the system talked on to its answer's end
    assert known["event"][0] + overlap["stop_time_s"] == pytest.approx(known["answer"][1], abs=0.15)
    assert overlap == {k: report["scores"]["user_interruption"]["overlap"]["rows"][0][k] for k in overlap}


def test_every_example_is_stored_with_its_run(stored):
    recorded, url, report = stored
    engine = make_engine(url)
    with session_scope(engine) as session:
        (run,) = examiner_runs(session, "cascaded")
        rows = examiner_examples(session, run.id)
        assert [(r.task, r.example) for r in rows] == [("smooth_turn_taking", "0"), ("user_interruption", "0")]
        smooth = report["scores"]["smooth_turn_taking"]["fdb"]["rows"][0]
        assert rows[0].tor == smooth["tor"] and rows[0].latency_s == smooth["latency_s"]
        assert rows[0].timeline == timeline(recorded, "smooth_turn_taking")
    # storing again replaces the examples, it does not add to them
    done = run_cli("examiner", "run", "--system", "cascaded", "--tasks", "smooth_turn_taking,user_interruption",
                   "--set", recorded.task_set, "--out", recorded.run, "--store", "--url", url)
    assert done.returncode == 0, done.stderr
    with session_scope(engine) as session:
        (run,) = examiner_runs(session, "cascaded")
        assert len(examiner_examples(session, run.id)) == 2
    engine.dispose()

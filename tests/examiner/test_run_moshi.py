"""`python -m examiner run --system moshi` against Kyutai's real `moshi.server` (a tiny random
model on CPU, tests/studies/real_moshi.py), end to end through the same call path as the other
systems: two short examples in real time, FDB's layout written sample-aligned, scored, each
example's timeline, stored. The model's words are random: the test checks the path, not the
content."""

from __future__ import annotations

import json

import pytest
import soundfile

from storage.db import make_engine, session_scope
from storage.records import examiner_examples, examiner_runs
from tests.browser import free_port
from tests.command_line import run_cli
from tests.examiner.short_tasks import EXAMPLE_S, QUESTIONS, short_task_set
from tests.studies.real_moshi import build_tiny_moshi, moshi_servers

@pytest.fixture(scope="module")
def examined(tmp_path_factory):
    root = tmp_path_factory.mktemp("moshi-examiner")
    task_set = short_task_set(root / "set")
    model = build_tiny_moshi(root / "model")
    with moshi_servers(model, root / "servers", [free_port()]) as (server,):
        config = json.dumps({"url": [server.url]})
        url = f"sqlite:///{root / 'examiner.db'}"
        done = run_cli("examiner", "run", "--system", "moshi", "--config", config, "--tasks", ",".join(QUESTIONS),
                       "--set", task_set, "--out", root / "run", "--store", "--url", url, "--json")
        frames = server.frames_handled
    assert done.returncode == 0, done.stderr
    return root, json.loads(done.stdout), url, frames, server.url


def test_the_moshi_server_is_called_for_every_example_in_real_time(examined):
    root, report, _, frames, url = examined
    assert report["kind"] == "moshi" and report["system"] == f'moshi {{"url": ["{url}"]}}'
    assert report["calls"] == 2 and report["audio_s"] == pytest.approx(2 * EXAMPLE_S, abs=0.1)
    # Kyutai's server answered the 80 ms frames of both calls (it says so in its log for each)
    assert frames >= 0.8 * 2 * EXAMPLE_S / 0.08
    for task in QUESTIONS:
        folder = root / "run" / task / "0"
        events = [json.loads(line) for line in (folder / "call.jsonl").read_text().splitlines()]
        assert [e["url"] for e in events if e["event"] == "connected"] == [url]
        heard, rate = soundfile.read(str(folder / "input.wav"))
        said, _ = soundfile.read(str(folder / "output.wav"))
        assert rate == 16000 and len(heard) == len(said) == int(EXAMPLE_S * 16000)
        assert abs(said).max() > 0  # the server's Opus frames, decoded, on the system's channel


def test_the_run_is_scored_given_timelines_and_stored(examined):
    root, report, url, _, _ = examined
    smooth = report["scores"]["smooth_turn_taking"]["fdb"]
    assert smooth["examples"] == 1 and smooth["tor"] in (0, 1)
    assert report["table"]["smooth_tor"] == smooth["tor"] and report["table"]["pause_tor"] is not None
    assert report["table"]["interruption_judge"] is None
    line = json.loads((root / "run" / "smooth_turn_taking" / "0" / "timeline.json").read_text())
    assert line["decision"]["rule"] == "FDB take-over" and len(line["channels"]["system"]["max"]) == 400
    engine = make_engine(url)
    with session_scope(engine) as session:
        (run,) = examiner_runs(session, report["system"])
        assert run.kind == "moshi" and run.summary == report["table"]
        assert sorted(e.task for e in examiner_examples(session, run.id)) == sorted(QUESTIONS)
    engine.dispose()

"""The examiner drives a system that is not embedded, through the same call path: the cascade
served by `python -m studies serve-realtime` (its own process) and reached as a `realtime` system."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import soundfile

from jobs.ray_runs import read_results
from tests.command_line import one_line_error, run_cli
from tests.studies.test_realtime_server import serving_realtime

TASKS = "smooth_turn_taking,user_interruption"


@pytest.fixture(scope="module")
def server_url(tmp_path_factory):
    """The served cascade on a free loopback port (no key: loopback only), two calls at once."""
    with serving_realtime(tmp_path_factory.mktemp("server") / "server.log", "--max-calls", "2") as url:
        yield url


def test_a_served_system_is_examined_through_the_same_call_path(server_url, tmp_path):
    assert run_cli("examiner", "make-tasks", tmp_path / "set", "--tasks", TASKS, "--per-task", "1",
                   "--seed", "0").returncode == 0
    # the two calls at once, as Ray tasks (a served system takes calls from several callers)
    done = run_cli("examiner", "run", "--system", "realtime", "--config", json.dumps({"url": server_url}),
                   "--tasks", TASKS, "--set", tmp_path / "set", "--out", tmp_path / "run", "--workers", "2", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["calls"] == 2 and report["system"].startswith("realtime ") and report["ray_workers"] == 2
    ray_calls = read_results(tmp_path / "run" / "ray")
    assert sorted(Path(item).parent.parent.name for item in ray_calls) == ["smooth_turn_taking", "user_interruption"]
    assert all(call["wall_s"] > 0 for call in ray_calls.values())
    # A second run finds every call done: it calls nothing, on Ray or here.
    again = json.loads(run_cli("examiner", "run", "--system", "realtime", "--config", json.dumps({"url": server_url}),
                               "--tasks", TASKS, "--set", tmp_path / "set", "--out", tmp_path / "run", "--workers",
                               "2", "--json").stdout)
    assert again["calls"] == 2 and again["ray_workers"] is None
    for task in ("smooth_turn_taking", "user_interruption"):
        folder = tmp_path / "run" / task / "0"
        heard, said = (soundfile.info(str(folder / name)) for name in ("input.wav", "output.wav"))
        assert heard.frames == said.frames and heard.samplerate == said.samplerate == 16000
        assert (folder / "output.json").exists()
    assert report["scores"]["smooth_turn_taking"]["fdb"]["examples"] == 1
    # The call went over the connection to the server, which heard the question.
    log = [json.loads(line) for line in (tmp_path / "run" / "smooth_turn_taking" / "0" / "call.jsonl").open()]
    assert any(e["event"] == "connected" and e["url"] == server_url for e in log)
    assert any(e["event"] == "transcript" and "pack" in e["text"].lower() for e in log)
    call = json.loads((tmp_path / "run" / "user_interruption" / "0" / "call.json").read_text())
    assert call["event"][0] > 0 and "onset_heard" in call


def test_a_bad_worker_count_is_refused_in_one_line(tmp_path):
    one_line_error(run_cli("examiner", "run", "--system", "realtime", "--config", '{"url": "ws://127.0.0.1:9/v1"}',
                           "--out", tmp_path / "run", "--workers", "0"), "--workers must be at least 1, got 0")

"""`python -m examiner run --system pipecat` against a real pipecat bot (tests/studies/pipecat_bot.py
in its own virtualenv: pipecat's Silero VAD, and each utterance said back), through the same call
path as every kind: two short examples in real time, FDB's layout written sample-aligned, scored.
A bot that answers whatever its VAD hears takes the turn after the question and at the pause."""

from __future__ import annotations

import json

import pytest
import soundfile

from tests.browser import free_port
from tests.command_line import run_cli
from tests.examiner.short_tasks import EXAMPLE_S, QUESTIONS, short_task_set
from tests.peers import PeerServer, peer_python


@pytest.fixture(scope="module")
def examined(tmp_path_factory):
    root = tmp_path_factory.mktemp("pipecat-examiner")
    task_set = short_task_set(root / "set")
    port = free_port()
    bot = [str(peer_python(".venv-pipecat")), "tests/studies/pipecat_bot.py", "--port", str(port)]
    with PeerServer(bot, ready="pipecat bot ready") as server:
        url = f"http://127.0.0.1:{port}/api/offer"
        done = run_cli("examiner", "run", "--system", "pipecat", "--config", json.dumps({"url": url}),
                       "--tasks", ",".join(QUESTIONS), "--set", task_set, "--out", root / "run", "--json")
        heard = sum(line.startswith("VAD stopped") for line in server.lines)
    assert done.returncode == 0, done.stderr
    return root, json.loads(done.stdout), url, heard


def test_the_bot_is_called_for_every_example_and_answers_what_it_heard(examined):
    root, report, url, heard = examined
    assert report["kind"] == "pipecat" and report["calls"] == 2
    assert heard >= 2  # the bot's own VAD heard the question and the words before the pause
    for task in QUESTIONS:
        folder = root / "run" / task / "0"
        events = [json.loads(line) for line in (folder / "call.jsonl").read_text().splitlines()]
        assert [e["url"] for e in events if e["event"] == "connected"] == [url]
        said, rate = soundfile.read(str(folder / "output.wav"))
        assert rate == 16000 and len(said) == int(EXAMPLE_S * 16000)
        facts = json.loads((folder / "example.json").read_text())
        after = said[int(facts["turn_end"] * 16000):]
        assert abs(after).max() > 0.1  # the bot's reply, after the speech, on the system's channel


def test_the_bot_takes_the_turn_after_the_question_and_at_the_pause(examined):
    _, report, _, _ = examined
    smooth = report["scores"]["smooth_turn_taking"]["fdb"]
    assert smooth["examples"] == 1 and smooth["tor"] == 1
    assert 0.3 < report["table"]["smooth_latency_s"] < 1.5
    assert report["table"]["pause_tor"] == 1  # a VAD's silence is all it knows of a turn's end

"""The examiner drives a system that is not embedded, through the same call path: the cascade
served by `python -m studies serve-realtime` (its own process) and reached as a `realtime` system."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import pytest
import soundfile

from studies.realtime_keys import REALTIME_KEY_ENV
from tests.command_line import ROOT, run_cli

TASKS = "smooth_turn_taking,user_interruption"
SERVER_START_S = 180


@pytest.fixture(scope="module")
def server_url(tmp_path_factory):
    """The served cascade on a free loopback port (no key: loopback only)."""
    log = tmp_path_factory.mktemp("server") / "server.log"
    env = {name: value for name, value in os.environ.items() if name != REALTIME_KEY_ENV}
    with open(log, "w") as errors:
        process = subprocess.Popen([sys.executable, "-m", "studies", "serve-realtime", "--system", "cascaded",
                                    "--port", "0", "--max-calls", "1"],
                                   cwd=ROOT, stdout=subprocess.PIPE, stderr=errors, text=True, env=env)
    lines: list[str] = []
    ready = threading.Event()

    def read():
        for line in process.stdout:
            lines.append(line)
            if line.startswith("serving "):
                ready.set()

    threading.Thread(target=read, daemon=True).start()
    try:
        if not ready.wait(SERVER_START_S):
            raise RuntimeError(f"the server did not start: {''.join(lines)} {log.read_text()[-2000:]}")
        yield next(line for line in lines if line.startswith("serving ")).split(" on ")[1].strip()
    finally:
        process.terminate()
        process.wait(10)


def test_a_served_system_is_examined_through_the_same_call_path(server_url, tmp_path):
    assert run_cli("examiner", "make-tasks", tmp_path / "set", "--tasks", TASKS, "--per-task", "1",
                   "--seed", "0").returncode == 0
    done = run_cli("examiner", "run", "--system", "realtime", "--config", json.dumps({"url": server_url}),
                   "--tasks", TASKS, "--set", tmp_path / "set", "--out", tmp_path / "run", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["calls"] == 2 and report["system"].startswith("realtime ")
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

"""The real servers a researcher's own system is, run from their own virtual environments (the
Makefile's `peers` set-up: their pins conflict with the app's, as Kyutai's server's do):

    .venv-pipecat        pipecat-ai[webrtc,silero] with FastAPI: tests/studies/pipecat_bot.py
    .venv-llama-server   llama-cpp-python[server], built from source: `python -m llama_cpp.server`

`PeerServer` starts one and waits for the line that says it is ready (an event, not a sleep);
what it prints is kept for the test's messages.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
READY_S = 120  # a cold start (imports, Silero, a model's load) on a loaded two-core machine


def peer_python(venv: str) -> Path:
    """The interpreter of a peer's virtual environment; a clear failure when it was not set up."""
    python = ROOT / venv / "bin" / "python"
    assert python.exists(), f"{python} is missing: `make peers` sets the peer servers up (make test does)"
    return python


class PeerServer:
    """A server process whose output is read on a thread: `ready` once a line matches."""

    def __init__(self, argv: list[str], ready: str, env: dict | None = None):
        self.argv = argv
        self.process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                        env={**os.environ, **(env or {})}, cwd=ROOT, start_new_session=True)
        self.lines: list[str] = []
        self._ready_pattern = re.compile(ready)
        self._changed = threading.Condition()
        self._ready = False
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            with self._changed:
                self.lines.append(line.rstrip())
                self._ready = self._ready or bool(self._ready_pattern.search(line))
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def wait_for(self, pattern: str, timeout_s: float = READY_S, start: int = 0) -> str:
        """The first line from `start` on matching `pattern`; AssertionError with the output if none comes."""
        found = re.compile(pattern)

        def match():
            return next((line for line in self.lines[start:] if found.search(line)), None)

        with self._changed:
            self._changed.wait_for(lambda: match() is not None or self.process.poll() is not None, timeout_s)
            line = match()
        assert line is not None, f"{self.argv[:3]}: no line matching {pattern!r}:\n" + "\n".join(self.lines[-30:])
        return line

    def wait_ready(self) -> "PeerServer":
        self.wait_for(self._ready_pattern.pattern)
        return self

    def pause(self) -> None:
        """The process stopped (SIGSTOP) where it is: it takes connections and answers nothing."""
        self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        self.process.send_signal(signal.SIGCONT)

    def kill(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(10)

    def __enter__(self) -> "PeerServer":
        return self.wait_ready()

    def __exit__(self, *exc) -> None:
        self.kill()

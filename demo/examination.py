"""The demo study's systems examined in the background after the app starts (`make run` passes
`app.py --demo-examiner`), so that the researcher view "Automatic benchmark" has rows: a small task
set (smooth turn-taking and pause handling, two examples each, seed 0) run against each embedded
system of the demo, one call at a time, each run stored as it finishes (examiner/study_runs.py).

The work is `python -m demo examine` in a process of its own, a child of the server at lower CPU
priority (as the analysis worker): its calls run in real time and must not hold the server's
interpreter. This module only starts and stops that process; it loads nothing heavy.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

from analysis.background import end_process
from storage.demo import DEMO_STUDY

log = logging.getLogger(__name__)
DEMO_EXAMINER_TASKS = ("smooth_turn_taking", "pause_handling")
DEMO_EXAMINER_PER_TASK = 2
DEMO_EXAMINER_SEED = 0
NICE = 10
ROOT = Path(__file__).resolve().parent.parent


def examination_command(database_url: str, data_root, parent_pid: int | None = None, nice: int = NICE) -> list[str]:
    command = [sys.executable, "-m", "demo", "examine", "--database-url", database_url,
               "--data-root", str(data_root), "--nice", str(nice)]
    return command + (["--parent-pid", str(parent_pid)] if parent_pid is not None else [])


class ExaminationProcess:
    """`python -m demo examine` as a child of the web server: started with it, stopped with it
    (the run folders resume at the next start). Not restarted when it ends: it ends when done."""

    def __init__(self, database_url: str, data_root, options: tuple[str, ...] = ()):
        # --parent-pid: a server killed outright does not leave its examination running on.
        # `options`: more of `python -m demo examine`'s (another task set, fewer systems).
        self.command = [*examination_command(database_url, data_root, os.getpid()), *options]
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(self.command, cwd=ROOT, stdin=subprocess.DEVNULL)
        log.info("examining the %s study's systems in the background (pid %s)", DEMO_STUDY, self.process.pid)

    def stop(self) -> None:
        end_process(self.process)
        self.process = None


def attach_examination(app, database_url: str, data_root) -> ExaminationProcess:
    """Run an ExaminationProcess while the FastAPI `app` serves."""
    examination = ExaminationProcess(database_url, data_root)
    app.router.on_startup.append(examination.start)
    app.router.on_shutdown.append(examination.stop)
    return examination

"""The background analysis worker: fills the study caches that the researcher views read, so that
no view computes inside a request.

A call ending and clips being registered queue their study (storage.analysis_queue; a judgment
changes no cached result, and the views built on judgments read them when opened); the worker takes queued studies one at a time and computes what is
missing: voice activity of new recordings, statistics, judge metrics, naturalness by every
scorer, for sessions and clips (analysis.views.StudyAnalysis.fill, one item at a time, each
stored as soon as it is done). Its progress and heartbeat go to the queue table, where any app
process's views read them.

    python -m analysis worker [--database-url URL] [--data-root DIR] [--once]
    python -m analysis fill --study NAME          # one study now, with progress bars

app.py starts one worker process next to the web server (lower CPU priority than the calls).
Several workers, in several processes or on several machines, may share one database: each study
is claimed by exactly one of them.
"""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field

from sqlmodel import Session

from analysis.views import StudyAnalysis
from storage.analysis_queue import (
    HEARTBEAT_S,
    claim_study,
    finish_study,
    report_progress,
    request_all,
)
from storage.models import Study, utc_now
from studies.retention import apply_everywhere

log = logging.getLogger(__name__)
POLL_S = 1.0  # how soon a queued study is noticed
# How often the worker applies the studies' retention periods (studies.retention): hourly is finer
# than any period in days; TURNTAKING_RETENTION_EVERY_S for tests and impatient operators.
RETENTION_EVERY_S = float(os.environ.get("TURNTAKING_RETENTION_EVERY_S", 3600))


class ClaimLost(RuntimeError):
    """Another worker took the study over (this one was silent too long); stop this pass."""


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{threading.get_ident() % 10000}"


@dataclass
class _Heartbeat:
    """The pass's latest progress, written to the queue every HEARTBEAT_S by a side thread, so
    that a single slow item (minutes of Whisper) does not look like a dead worker."""

    engine: object
    study_id: int
    worker: str
    stage: str = ""
    done: int = 0
    total: int = 0
    stage_started_at: object = None
    lost: bool = False
    _stop: threading.Event = field(default_factory=threading.Event)

    def update(self, stage: str, done: int, total: int) -> None:
        if stage != self.stage:
            self.stage, self.stage_started_at = stage, utc_now()
        self.done, self.total = done, total
        if self.lost:
            raise ClaimLost(f"study {self.study_id} was taken over by another worker")

    def beat(self) -> None:
        if not report_progress(self.engine, self.study_id, self.worker, self.stage, self.done, self.total,
                               self.stage_started_at):
            self.lost = True

    def run(self) -> None:
        while not self._stop.wait(HEARTBEAT_S / 2):
            try:
                self.beat()
            except Exception:  # a database hiccup: the next beat tries again
                log.exception("analysis worker heartbeat")

    def __enter__(self):
        self._thread = threading.Thread(target=self.run, name="analysis-heartbeat", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def fill_study(engine, name: str, data_root=None, checkpoint=None, progress=None) -> dict[str, int]:
    """Compute and cache every result the study's views read; {stage: items computed}."""
    computed: dict[str, int] = {}

    def counting(stage: str, done: int, total: int) -> None:
        computed[stage] = total
        if progress is not None:
            progress(stage, done, total)

    StudyAnalysis(engine, name, data_root, checkpoint, compute=True, progress=counting).fill()
    return computed


def run_pass(engine, study_id: int, worker: str, data_root=None, checkpoint=None) -> dict[str, int] | None:
    """One claimed study brought up to date; the claim is released whatever happens."""
    error = None
    computed = None
    try:
        with Session(engine) as session:
            study = session.get(Study, study_id)
            name = study.name if study is not None else None
        if name is not None:
            with _Heartbeat(engine, study_id, worker) as heartbeat:
                computed = fill_study(engine, name, data_root, checkpoint, heartbeat.update)
    except ClaimLost:
        log.warning("study %s: taken over by another worker", study_id)
        return None
    except Exception as exc:  # noqa: BLE001 -- any failure is reported on the views, and the worker goes on
        log.exception("analysis of study %s failed", study_id)
        error = f"{type(exc).__name__}: {exc}"[:500]
    finish_study(engine, study_id, worker, error)
    return computed


def run_worker(engine, data_root=None, checkpoint=None, once: bool = False, stop: threading.Event | None = None,
               poll_s: float = POLL_S, parent_pid: int | None = None) -> int:
    """Take queued studies until `stop` is set (`once`: until none is queued; `parent_pid`: until
    that process, the server that started this worker, is gone); passes run."""
    worker = worker_name()
    stop = stop or threading.Event()
    request_all(engine)  # a database filled before this worker ran (or by an older version) is checked once
    passes = 0
    retention_at = 0.0  # at once: a worker started after a long stop catches up
    while not stop.is_set() and (parent_pid is None or os.getppid() == parent_pid):
        if time.monotonic() >= retention_at:
            retention_at = time.monotonic() + RETENTION_EVERY_S
            apply_retention(engine, data_root)
        study_id = claim_study(engine, worker)
        if study_id is None:
            if once:
                break
            stop.wait(poll_s)
            continue
        started = time.monotonic()
        computed = run_pass(engine, study_id, worker, data_root, checkpoint)
        passes += 1
        if computed:
            log.info("study %s: computed %s in %.1f s", study_id, computed, time.monotonic() - started)
    return passes


def apply_retention(engine, data_root=None) -> None:
    """The studies' retention periods applied now; a failure is logged and tried at the next pass."""
    try:
        removed = apply_everywhere(engine, data_root=data_root)
    except Exception:  # noqa: BLE001 -- the analysis goes on; the log says what failed
        log.exception("applying the studies' retention periods failed")
        return
    for name, count in removed.items():
        if count:
            log.info("study %s: retention removed %d expired item(s)", name, count)


def end_process(process: subprocess.Popen | None, grace_s: float = 10.0) -> None:
    """Ask a child process to end (SIGTERM), and kill it if it has not within `grace_s`."""
    if process is not None and process.poll() is None:
        process.terminate()
        try:
            process.wait(grace_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class WorkerProcess:
    """`python -m analysis worker` as a child of the web server: started with it, restarted if it
    dies, stopped with it. A process of its own, at lower CPU priority, so that scoring a study
    never holds the server's interpreter or steals a call's CPU."""

    RESTART_S = 5.0

    def __init__(self, database_url: str, data_root, checkpoint=None, nice: int = 10):
        # --parent-pid: a server killed outright does not leave its worker running on
        self.command = [sys.executable, "-m", "analysis", "worker", "--database-url", database_url,
                        "--data-root", str(data_root), "--nice", str(nice), "--parent-pid", str(os.getpid())]
        if checkpoint is not None:
            self.command += ["--checkpoint", str(checkpoint)]
        self.process: subprocess.Popen | None = None
        self.restarts = 0

    def start(self) -> None:
        self.process = subprocess.Popen(self.command, stdin=subprocess.DEVNULL)

    def check(self) -> None:
        """Start it again if it has died (called every RESTART_S by the server)."""
        if self.process is not None and self.process.poll() is not None:
            log.warning("analysis worker exited with %s; starting it again", self.process.returncode)
            self.restarts += 1
            self.start()

    def stop(self) -> None:
        end_process(self.process)
        self.process = None


def attach_worker(app, engine, data_root, checkpoint=None) -> WorkerProcess:
    """Run a WorkerProcess for as long as the FastAPI `app` serves."""
    import asyncio

    worker = WorkerProcess(engine.url.render_as_string(hide_password=False), data_root, checkpoint)
    watchers: list[asyncio.Task] = []

    async def watch():
        while True:
            await asyncio.sleep(WorkerProcess.RESTART_S)
            worker.check()

    def start():
        worker.start()
        watchers.append(asyncio.ensure_future(watch()))

    def stop():
        for task in watchers:
            task.cancel()
        worker.stop()

    app.router.on_startup.append(start)
    app.router.on_shutdown.append(stop)
    return worker

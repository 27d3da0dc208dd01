"""The progress record of a study's systems examined in the background (examiner/study_runs.py):
one small JSON file under the data root, written by the examining process, read by the
researcher view "Automatic benchmark" (which runs in another process).

    <data root>/examiner/<study>/progress.json

Light on purpose (no model, no call stack): the views import it.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, replace
from datetime import datetime, timezone
from pathlib import Path

PROGRESS_FILE = "progress.json"
# The examining process rewrites the record at least this often; a record older than STALE_S
# while it says "running" was left by a process that is gone (the app stopped or was killed).
HEARTBEAT_S = 10.0
STALE_S = 6 * HEARTBEAT_S
TASK_WORDS = {"smooth_turn_taking": "smooth turn-taking", "pause_handling": "pause handling",
              "backchannel": "backchannel", "user_interruption": "user interruption",
              "user_backchannel": "user backchannel", "background_speech": "background speech",
              "noise_burst": "noise burst"}


def examination_folder(data_root, study: str) -> Path:
    """Where a study's background examination keeps its task set, run folders and progress."""
    return Path(data_root) / "examiner" / study


@dataclass(frozen=True)
class SystemProgress:
    """One study system in the examination."""

    name: str  # the study's name of the system
    label: str  # what it is examined and stored as (examiner.table.system_label)
    state: str = "waiting"  # "waiting", "running", "done", "failed"
    done: int = 0  # calls finished (of `total`)
    total: int = 0
    stored_before: bool = False  # its run on this task set was stored by an earlier start: not redone
    late_blocks: int | None = None
    error: str | None = None  # one line, when failed

    def describe(self) -> str:
        if self.state == "running":
            return f"{self.name} {self.done} of {self.total} examples" if self.total else f"{self.name} loading"
        if self.state == "done":
            late = f" ({self.late_blocks} late block(s): the machine was busy)" if self.late_blocks else ""
            return f"{self.name} done" + (" (stored before)" if self.stored_before else late)
        if self.state == "failed":
            return f"{self.name} failed"
        return f"{self.name} waiting"


@dataclass(frozen=True)
class ExaminationProgress:
    """Where a study's background examination stands."""

    study: str
    tasks: tuple[str, ...]
    per_task: int
    seed: int
    # "starting", "making the task set", "waiting for the background analysis", "running",
    # "finished", "failed" (before any system: `error` says why)
    state: str
    systems: tuple[SystemProgress, ...] = ()
    beat_at: str = ""  # ISO time of the last write (the heartbeat)
    error: str | None = None

    def with_system(self, system: SystemProgress) -> ExaminationProgress:
        return replace(self, systems=tuple(system if s.name == system.name else s for s in self.systems))

    def stale(self, now: datetime | None = None) -> bool:
        """True when it says it is working but its process has not written for STALE_S."""
        if self.state in ("finished", "failed") or not self.beat_at:
            return False
        now = now or datetime.now(timezone.utc)
        return (now - datetime.fromisoformat(self.beat_at)).total_seconds() > STALE_S

    def stamp(self) -> str:
        """What changes when the view has something new to show (not the heartbeat)."""
        return json.dumps([self.state, [asdict(s) for s in self.systems]], sort_keys=True)

    def describe(self) -> list[str]:
        """The view's lines: where it stands, then one line per failed system."""
        tasks = " and ".join(TASK_WORDS.get(t, t) for t in self.tasks)
        what = f"{tasks}, {self.per_task} example(s) each, seed {self.seed}"
        systems = ", ".join(s.describe() for s in self.systems)
        if self.state == "finished":
            head = f"Examined the {self.study} study's systems in the background ({what}): {systems}."
        elif self.state == "failed":
            head = f"The background examination of the {self.study} study's systems failed ({what}): {self.error}"
        elif self.stale():
            head = (f"The background examination of the {self.study} study's systems stopped ({what}; last news "
                    f"{self.beat_at[:19].replace('T', ' ')} UTC): {systems}. It goes on at the app's next start.")
        else:
            doing = "" if self.state == "running" else f", {self.state}"
            head = f"Examining the {self.study} study's systems in the background ({what}){doing}: {systems}."
        return [head] + [f"{s.name} failed: {s.error}" for s in self.systems if s.state == "failed"]


def one_line(exc: BaseException) -> str:
    """An exception as the view's one line: its type and its message's first line."""
    line = (str(exc).strip().splitlines() or [""])[0][:300]
    return f"{type(exc).__name__}: {line}" if line else type(exc).__name__


def write_progress(folder: Path, progress: ExaminationProgress) -> ExaminationProgress:
    """Write the record (whole or not at all: a reader never sees half a file); as written."""
    progress = replace(progress, beat_at=datetime.now(timezone.utc).isoformat(timespec="seconds"))
    folder.mkdir(parents=True, exist_ok=True)
    partial = folder / f".{PROGRESS_FILE}.{os.getpid()}"
    partial.write_text(json.dumps(asdict(progress), indent=1))
    os.replace(partial, folder / PROGRESS_FILE)
    return progress


def read_progress(data_root, study: str) -> ExaminationProgress | None:
    """The study's progress record, or None when none was written (or it cannot be read)."""
    path = examination_folder(data_root, study) / PROGRESS_FILE
    try:
        data = json.loads(path.read_text())
        return ExaminationProgress(**{**data, "tasks": tuple(data["tasks"]),
                                      "systems": tuple(SystemProgress(**s) for s in data["systems"])})
    except (OSError, ValueError, TypeError, KeyError):
        return None

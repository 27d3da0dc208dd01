"""A study's embedded systems examined one after another on one small task set, in the
background, each run stored as soon as it finishes, on the path of `python -m examiner run --store`
(examiner.runs.run_system, then store_run); where it stands goes to a small progress record that the
researcher view "Automatic benchmark" reads (examiner/progress.py).

    <data root>/examiner/<study>/progress.json
                                /sets/<set>/              the task set, made once from the seed
                                /runs/<set>/<id>-<name>/  each system's run folder: it resumes after
                                                          its last finished call

A system whose run on this task set (the same manifest, so the same hash) is stored already is not
run again: a second start goes straight on to what is missing. The calls run in real time, one at
a time (examiner/README.md: calls at once share the cores and answer later); each system waits
until the study's background analysis is not computing, so that the analysis's Whisper does not
share the cores with a call either.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, replace
from pathlib import Path

from sqlmodel import select

from examiner.progress import (
    HEARTBEAT_S,
    ExaminationProgress,
    SystemProgress,
    examination_folder,
    one_line,
    write_progress,
)
from examiner.runs import run_system, store_run
from examiner.table import system_label
from examiner.task_sets import make_task_set
from storage.analysis_queue import analysis_state
from storage.db import make_engine, session_scope
from storage.models import DialogueSystem, ExaminerRun, Study
from storage.records import params_hash
from systems import system_kind

ANALYSIS_POLL_S = 2.0
# A study queued for analysis is claimed by a running worker within a second or two; one still
# queued after this long has no worker (an app started with --no-background-analysis): go on.
QUEUED_WAIT_S = 60.0


@dataclass(frozen=True)
class ExaminationPlan:
    """Which study's systems, on which task set."""

    study: str
    tasks: tuple[str, ...]
    per_task: int
    seed: int
    systems: tuple[str, ...] | None = None  # the study's names of the systems; None: every embedded one

    def set_name(self) -> str:
        return f"seed{self.seed}-{self.per_task}each-{'+'.join(self.tasks)}"


class ExaminationStopped(Exception):
    """Asked to stop (the app is going away); the run folders resume at the next start."""


@dataclass(frozen=True)
class StudySystem:
    id: int
    name: str
    kind: str  # the registry's name (an alias stored in the row is resolved)
    config: dict

    @property
    def label(self) -> str:
        return system_label(self.kind, self.config)

    def folder_name(self) -> str:
        return f"{self.id}-{re.sub(r'[^A-Za-z0-9_.-]+', '-', self.name)}"


def embedded_systems(engine, plan: ExaminationPlan) -> tuple[int, list[StudySystem]]:
    """(the study's id, its systems that run in this process, in the study's order)."""
    with session_scope(engine) as session:
        study = session.exec(select(Study).where(Study.name == plan.study)).first()
        if study is None:
            raise ValueError(f"no study named {plan.study!r}")
        rows = session.exec(select(DialogueSystem).where(DialogueSystem.study_id == study.id)
                            .order_by(DialogueSystem.id)).all()
        systems = [StudySystem(r.id, r.name, system_kind(r.kind).name, dict(r.config or {})) for r in rows
                   if system_kind(r.kind).embedded and (plan.systems is None or r.name in plan.systems)]
        unknown = set(plan.systems or ()) - {s.name for s in systems}
        if unknown:
            raise ValueError(f"not an embedded system of study {plan.study!r}: {', '.join(sorted(unknown))}")
        return study.id, systems


def stored_labels(engine, manifest: dict) -> set[str]:
    """The systems whose run on the task set of `manifest` is stored."""
    with session_scope(engine) as session:
        return set(session.exec(select(ExaminerRun.system)
                                .where(ExaminerRun.task_set_hash == params_hash(manifest))).all())


class ProgressRecord:
    """The examination's progress, written on every change and every HEARTBEAT_S by a side thread
    (the view tells a record left by a process that is gone by its age)."""

    def __init__(self, folder: Path, progress: ExaminationProgress):
        self.folder = folder
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.progress = write_progress(folder, progress)

    def update(self, **changes) -> None:
        with self._lock:
            self.progress = write_progress(self.folder, replace(self.progress, **changes))

    def update_system(self, name: str, **changes) -> None:
        with self._lock:
            system = next(s for s in self.progress.systems if s.name == name)
            self.progress = write_progress(self.folder, self.progress.with_system(replace(system, **changes)))

    def _beat(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            self.update()

    def __enter__(self) -> ProgressRecord:
        self._thread = threading.Thread(target=self._beat, name="examination-heartbeat", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def wait_for_analysis(engine, study_id: int, stop: threading.Event) -> None:
    """Until the study's background analysis is not computing (nor queued for a worker that will
    take it), or `stop`."""
    waited = 0.0
    while not stop.is_set():
        state = analysis_state(engine, study_id)
        if state.status != "computing" and not (state.status == "queued" and waited < QUEUED_WAIT_S):
            return
        stop.wait(ANALYSIS_POLL_S)
        waited += ANALYSIS_POLL_S
    raise ExaminationStopped()


def task_set(folder: Path, plan: ExaminationPlan, record: ProgressRecord) -> dict:
    """The plan's task set under `folder` (made once); its manifest."""
    out = folder / "sets" / plan.set_name()
    if not (out / "manifest.json").exists():  # the manifest is written last: a set without it is remade
        record.update(state="making the task set")
        make_task_set(out, plan.tasks, plan.per_task, plan.seed, progress=False)
    return {**json.loads((out / "manifest.json").read_text()), "folder": str(out)}


def examine_system(database_url: str, engine, study_id: int, system: StudySystem, plan: ExaminationPlan,
                   set_folder: str, runs: Path, record: ProgressRecord, stop: threading.Event) -> None:
    """One system's run on the task set, stored when it finishes; its failure in one line."""
    record.update(state="waiting for the background analysis")
    wait_for_analysis(engine, study_id, stop)
    record.update(state="running")
    record.update_system(system.name, state="running")

    def on_call(done: int, total: int) -> None:
        record.update_system(system.name, done=done, total=total)
        if stop.is_set():
            raise ExaminationStopped()

    try:
        report = run_system(runs / system.folder_name(), system.kind, system.config, plan.tasks, set_folder,
                            progress=False, on_call=on_call)
        store_run(report, database_url)
    except ExaminationStopped:
        raise
    except Exception as exc:  # noqa: BLE001 -- the view says why in one line; the next system goes on
        record.update_system(system.name, state="failed", error=one_line(exc))
        return
    record.update_system(system.name, state="done", late_blocks=report["late_blocks"])


def examine_study(database_url: str, data_root, plan: ExaminationPlan,
                  stop: threading.Event | None = None) -> ExaminationProgress:
    """Every embedded system of the study examined on the plan's task set and stored, those stored
    before skipped; the progress at the end (state "failed" when no system could be run: the task
    set, the database). `stop` set: ExaminationStopped after the current call."""
    stop = stop or threading.Event()
    folder = examination_folder(data_root, plan.study)
    engine = make_engine(database_url)
    try:
        study_id, systems = embedded_systems(engine, plan)
        start = ExaminationProgress(plan.study, tuple(plan.tasks), plan.per_task, plan.seed, "starting",
                                    tuple(SystemProgress(s.name, s.label) for s in systems))
        with ProgressRecord(folder, start) as record:
            try:
                manifest = task_set(folder, plan, record)
                set_folder = manifest.pop("folder")
                stored = stored_labels(engine, manifest)
            except Exception as exc:  # noqa: BLE001 -- the view says why in one line
                record.update(state="failed", error=one_line(exc))
                return record.progress
            for system in systems:
                if system.label in stored:
                    record.update_system(system.name, state="done", stored_before=True)
                    continue
                examine_system(database_url, engine, study_id, system, plan, set_folder,
                               folder / "runs" / plan.set_name(), record, stop)
            record.update(state="finished")
            return record.progress
    finally:
        engine.dispose()

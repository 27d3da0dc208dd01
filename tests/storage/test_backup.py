"""Backups that restore (storage.backup; `python -m storage backup | verify | restore`), on a real
SQLite file and a real PostgreSQL database.

Under load: two calls record (each a process writing its WAV in real time and renewing its lease)
and twenty annotators judge through the served API while the backup is taken. The restored copy
holds every judgment acknowledged before the backup began and every file its manifest names, byte
for byte; the app starts on it. Taken again when all is quiet, the restored copy shows the same
study views as the original. Bad input (a folder or data root not empty, a changed file, a
manifest that is not one, a database not empty) gets one line, exit 1, and changes nothing.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
import soundfile
import sqlalchemy as sa
from fastapi import FastAPI

from analysis.views import StudyAnalysis, study_view
from annotation.api import api_router
from annotation.assignment import AssignmentSettings
from annotation.register import register_benchmark
from annotation.simulate import stored_trials
from annotation.trials import create_annotators, get_study
from app import build_app
from storage import audit_trail
from storage.__main__ import main as storage_main
from storage.backup import MANIFEST
from storage.db import make_engine, session_scope
from storage.records import get_or_create_participant, get_system, start_session
from studies.config import apply_config, parse_config
from studies.sessions import call_relpath, timing_relpath
from tests.annotation.small_benchmark import write_small_benchmark
from tests.annotation.test_annotator_erasure import answer_body
from tests.browser import serve
from tests.databases import engine  # noqa: F401  (pytest fixture)
from tests.studies.test_leases import CALL_PROCESS
from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
RACERS = 20


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def cli(*args) -> tuple[int, str]:
    """`python -m storage ARGS` in this process: (exit code, what it printed to stderr after its
    progress bar)."""
    import contextlib
    import io

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = storage_main([str(a) for a in args])
    return code, err.getvalue().split("\r")[-1]


def recorded_frames(path: Path) -> int:
    """Frames a call's WAV says it holds so far (the recorder rewrites its header as it goes)."""
    try:
        return soundfile.info(str(path)).frames
    except (OSError, RuntimeError):  # not written yet
        return 0


def judgments(engine) -> int:
    with engine.connect() as connection:
        return connection.exec_driver_sql("SELECT count(*) FROM judgment").scalar_one()


class Race:
    """Annotators judging at once, each request's time kept. Each answers `before` trials, then holds
    its next one until `released` is set (the backup starts), so that answers arrive while it runs."""

    def __init__(self, base_url: str, tokens: list[str], before: int = 2, released: bool = False):
        self.base_url, self.before, self.errors = base_url, before, []
        self.changed = threading.Condition()  # notified at every stored answer
        self.released = threading.Event()
        if released:
            self.released.set()
        self.acknowledged: list[tuple[float, int]] = []  # (when the answer was acknowledged, trial id)
        self.submits: list[tuple[float, float]] = []
        self.threads = [threading.Thread(target=self.annotate, args=(t,)) for t in tokens]

    def annotate(self, token: str) -> None:
        answered = 0
        with httpx.Client(base_url=self.base_url, timeout=120) as client:
            while True:
                state = client.get("/api/annotate/next", params={"token": token}).json()
                if state["status"] in ("complete", "no_work"):
                    return
                if state["status"] == "wait":  # every open pair is held: until someone answers
                    with self.changed:
                        self.changed.wait(timeout=1.0)
                    continue
                if answered >= self.before and not self.released.wait(timeout=300):
                    self.errors.append("never released")
                    return
                t0 = time.monotonic()
                answer = client.post("/api/annotate/submit", json=answer_body(token, state["trial"]))
                with self.changed:
                    self.submits.append((t0, time.monotonic()))
                    if answer.status_code != 200:
                        self.errors.append(answer.text)
                        return
                    self.acknowledged.append((time.monotonic(), state["trial"]["id"]))
                    self.changed.notify_all()
                answered += 1

    def __enter__(self):
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc):
        for thread in self.threads:
            thread.join(timeout=300)


def loaded_study(engine, tmp_path: Path):
    """A study of twenty annotators' tokens, and two calls of another study started."""
    data_root = tmp_path / "data"
    bench = write_small_benchmark(tmp_path / "bench", pairs=15, controls=1)
    with session_scope(engine) as session:
        register_benchmark(session, bench, "s", data_root,
                           AssignmentSettings(judgments_per_pair=3, trials_per_annotator=4, attention_every=5),
                           attention_checks=1, practice=0, pause_s=1.0)
        tokens = create_annotators(session, get_study(session, "s"), RACERS)
        study = apply_config(session, parse_config({"name": "calls", "systems": [{"name": "c", "kind": "cascaded"}]}))
        system = get_system(session, study, "c")
        calls = [start_session(session, get_or_create_participant(session, study), system, "hiking").id
                 for _ in range(2)]
    return data_root, tokens, calls


def start_calls(engine, data_root: Path, calls: list[int]) -> list[subprocess.Popen]:
    url = engine.url.render_as_string(hide_password=False)
    processes = []
    for session_id in calls:
        wav = data_root / call_relpath(session_id)
        wav.parent.mkdir(parents=True, exist_ok=True)
        processes.append(subprocess.Popen([sys.executable, "-c", CALL_PROCESS, url, str(wav),
                                           str(data_root / timing_relpath(session_id)), str(session_id)],
                                          cwd=ROOT, stdout=subprocess.PIPE, text=True))
    for process in processes:
        assert process.stdout.readline().strip() == "running"
    return processes


def restore_target(engine, request) -> str | None:
    """An empty database of the engine's kind for the restore (SQLite: the default, in the data root)."""
    return request.getfixturevalue("postgres_url") if engine.dialect.name == "postgresql" else None


def human_view(engine, data_root: Path) -> str:
    """The study's human-evaluation view, its numbers and tables as text (NaN compares equal so)."""
    view = study_view(StudyAnalysis(engine, "s", data_root, compute=True), "human")
    return json.dumps([view.headline, {name: table.to_dict("records") for name, table in view.tables.items()}],
                      sort_keys=True, default=str)


def test_a_backup_under_load_restores_byte_for_byte_and_the_app_starts_on_it(engine, tmp_path, request):
    url = engine.url.render_as_string(hide_password=False)
    data_root, tokens, calls = loaded_study(engine, tmp_path)
    recorders = start_calls(engine, data_root, calls)
    app = FastAPI()
    app.include_router(api_router(engine, data_root))
    folder = tmp_path / "backup"
    try:
        with serve(app) as base_url, Race(base_url, tokens) as race:
            # acknowledged to the annotators, not merely written: on a loaded machine the responses
            # reach them a while after the rows are (counting rows, 5 of 10 were acknowledged at the start)
            wait_until(lambda: len({trial for _, trial in race.acknowledged}) >= 10, 120,
                       "the annotators' first judgments, acknowledged")
            wait_until(lambda: all(recorded_frames(data_root / call_relpath(c)) >= 16_000 for c in calls), 30,
                       "a second of each call")
            started = time.monotonic()
            race.released.set()  # the held answers go in while the backup runs
            code, err = cli("--url", url, "backup", folder, "--data", data_root)
            ended = time.monotonic()
            assert code == 0, err
    finally:
        for process in recorders:
            process.kill()
            process.wait(timeout=10)
    assert race.errors == []
    during = sum(t0 < ended and t1 > started for t0, t1 in race.submits)
    acknowledged_before = {trial for at, trial in race.acknowledged if at < started}
    assert during > 0 and len(acknowledged_before) >= 10  # the annotators were at it while it ran
    assert cli("verify", folder)[0] == 0

    manifest = json.loads((folder / MANIFEST).read_text())
    names = set(manifest["files"])
    assert {call_relpath(c) for c in calls} <= names and any(name.startswith("clips/") or "/" in name for name in names)
    restored_root = tmp_path / "restored"
    target = restore_target(engine, request)
    code, err = cli(*(["--url", target] if target else []), "restore", folder, "--data", restored_root)
    assert code == 0, err
    for name, entry in manifest["files"].items():  # every file it names, byte for byte
        assert sha256(restored_root / name) == entry["sha256"] == sha256(folder / "files" / name)
    for c in calls:  # a call still running is copied as far as it was written: a WAV that plays
        assert soundfile.info(str(restored_root / call_relpath(c))).frames >= 16_000
    restored = make_engine(target or f"sqlite:///{restored_root / 'turntaking.db'}")
    try:
        with session_scope(restored) as session:
            assert acknowledged_before <= stored_trials(session)  # no acknowledged judgment left behind
        if restored.dialect.name == "sqlite":
            with restored.connect() as connection:
                assert connection.exec_driver_sql("PRAGMA foreign_key_check").fetchall() == []
        assert [e.action for e in audit_trail.events(restored)][:1] == ["restore"]
    finally:
        restored.dispose()
    assert [e.action for e in audit_trail.events(engine)][:1] == ["backup"]

    # The app starts on the restored copy.
    started_app = build_app(database_url=target or f"sqlite:///{restored_root / 'turntaking.db'}",
                            data_root=restored_root, researcher_password="restored-app-password")
    with serve(started_app) as base_url:
        assert httpx.get(f"{base_url}/participate/", timeout=60).status_code == 200
    started_app.state.engine.dispose()


def test_a_quiet_backup_restores_to_the_same_views(engine, tmp_path, request):
    url = engine.url.render_as_string(hide_password=False)
    data_root, tokens, _ = loaded_study(engine, tmp_path)
    app = FastAPI()
    app.include_router(api_router(engine, data_root))
    with serve(app) as base_url, Race(base_url, tokens[:8], released=True) as race:
        pass
    assert race.errors == [] and judgments(engine) > 0
    folder, restored_root = tmp_path / "backup", tmp_path / "restored"
    target = restore_target(engine, request)
    assert cli("--url", url, "backup", folder, "--data", data_root)[0] == 0
    assert cli(*(["--url", target] if target else []), "restore", folder, "--data", restored_root)[0] == 0
    restored = make_engine(target or f"sqlite:///{restored_root / 'turntaking.db'}")
    try:
        assert human_view(restored, restored_root) == human_view(engine, data_root)
    finally:
        restored.dispose()


@pytest.fixture
def small_backup(engine, tmp_path):
    data_root = tmp_path / "data"
    (data_root / "sessions" / "1").mkdir(parents=True)
    (data_root / "sessions" / "1" / "call.wav").write_bytes(b"RIFF" + bytes(range(256)) * 40)
    (data_root / ".cache" / "gradio").mkdir(parents=True)
    (data_root / ".cache" / "gradio" / "copy.wav").write_bytes(b"a cached copy")
    folder = tmp_path / "backup"
    code, err = cli("--url", engine.url.render_as_string(hide_password=False), "backup", folder, "--data", data_root)
    assert code == 0, err
    return folder


def test_the_cache_is_not_backed_up(small_backup):
    assert set(json.loads((small_backup / MANIFEST).read_text())["files"]) == {"sessions/1/call.wav"}


def test_bad_input_gets_one_line_and_changes_nothing(engine, small_backup, tmp_path, request):
    url = engine.url.render_as_string(hide_password=False)
    # a backup folder that is not empty
    code, err = cli("--url", url, "backup", small_backup, "--data", tmp_path / "data")
    assert (code, err.count("\n")) == (1, 1) and "is not empty" in err
    # a data root that is not empty
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "keep.txt").write_text("mine")
    code, err = cli("restore", small_backup, "--data", busy)
    assert (code, err.count("\n")) == (1, 1) and "is not empty" in err
    assert [p.name for p in busy.iterdir()] == ["keep.txt"]
    # a database that is not empty (the original itself)
    code, err = cli("--url", url, "restore", small_backup, "--data", tmp_path / "fresh")
    assert code == 1 and ("not empty" in err or "not a new SQLite file" in err) and not (tmp_path / "fresh").exists()
    # a file changed in the backup: named, and nothing restored
    changed = small_backup / "files" / "sessions" / "1" / "call.wav"
    changed.write_bytes(changed.read_bytes()[:-1] + b"\x00")
    for args in (("verify", small_backup), ("restore", small_backup, "--data", tmp_path / "fresh")):
        code, err = cli(*args)
        assert (code, err.strip()) == (1, "error: sessions/1/call.wav: missing or changed since the backup "
                                          "(sha256 differs)")
    assert not (tmp_path / "fresh").exists()
    # a manifest that is not one; a folder without one (an unfinished backup)
    (small_backup / MANIFEST).write_text("{not json")
    assert cli("verify", small_backup) == (1, f"error: {small_backup / MANIFEST}: not a backup manifest (JSONDecodeError)\n")
    (small_backup / MANIFEST).unlink()
    assert cli("verify", small_backup) == (1, f"error: {small_backup}: no {MANIFEST} (not a backup, or an unfinished one)\n")

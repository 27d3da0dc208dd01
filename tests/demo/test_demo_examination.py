"""The demo's systems examined in the background (`app.py --demo-examiner`, which `make run`
passes): the process the app starts makes a task set, runs the embedded system on it in real time
and stores the run; the view "Automatic benchmark" says how far it is while it works, then shows
the stored row and examples; a second start finds the run stored and calls nothing.

One system (the plain cascade, the fastest to load and answer) on one example each of smooth
turn-taking and pause handling: about a minute."""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import datetime, timedelta, timezone

import gradio as gr

from analysis.dashboard import Researcher
from analysis.views import StudyAnalysis, examiner_view
from app import build_app
from demo.examination import ExaminationProcess
from examiner.progress import ExaminationProgress, SystemProgress, examination_folder, read_progress
from storage.db import init_db, make_engine, session_scope
from storage.demo import DEMO_STUDY, seed_demo_study
from storage.records import examiner_examples, examiner_runs
from tests.command_line import run_cli_process
from tests.waiting import wait_until

TINY = ("--tasks", "smooth_turn_taking,pause_handling", "--per-task", "1", "--systems", "cascaded")
# At the test's own priority (the app's examination runs at nice 10 beside the server), so that
# the test's polling of the view does not hold its calls back.


def view_of(engine, data_root):
    return examiner_view(StudyAnalysis(engine, DEMO_STUDY, data_root, compute=False))


def test_the_demo_is_examined_in_the_background_and_the_view_follows(sqlite_url, tmp_path):
    engine = make_engine(sqlite_url)
    init_db(engine)
    with session_scope(engine) as session:
        seed_demo_study(session)
    assert not any("in the background" in note for note in view_of(engine, tmp_path).notes)

    examination = ExaminationProcess(sqlite_url, tmp_path, (*TINY, "--nice", "0"))
    began = time.monotonic()
    examination.start()
    try:
        # While it works: the view says which system and how many of its examples are done.
        working = wait_until(lambda: next((n for n in view_of(engine, tmp_path).notes
                                           if "cascaded 1 of 2 examples" in n), None), 120,
                             "the first call's progress", poll_s=1.0)
        assert working.startswith("Examining the demo study's systems in the background")
        assert "smooth turn-taking and pause handling, 1 example(s) each, seed 0" in working
        assert examination.process.wait(120) == 0
    finally:
        examination.stop()
    took = time.monotonic() - began

    view = view_of(engine, tmp_path)
    assert view.notes[0].startswith("Examined the demo study's systems in the background")
    assert "cascaded done" in view.notes[0] and view.headline["background_examination"] == "finished"
    row = view.tables["examiner"].set_index("system").loc["cascaded"]
    assert row["calls"] == 2 and row["task_set_seed"] == 0 and row["smooth_tor"] in (0.0, 1.0)
    assert set(view.tables["examples"]["task"]) == {"smooth_turn_taking", "pause_handling"}
    assert "timeline" in view.figures
    assert any("Not examined yet: cascade-backchannel" in note for note in view.notes)  # left out here

    # The open tab is shown again when the examination has news, and not again until it has more.
    researcher = Researcher(engine, tmp_path)
    shown = researcher.examiner_progress(DEMO_STUDY, "", "examiner")
    assert shown[0] == read_progress(tmp_path, DEMO_STUDY).stamp() and "cascaded done" in shown[2]
    assert researcher.examiner_progress(DEMO_STUDY, shown[0], "examiner")[2] == gr.skip()
    assert researcher.examiner_progress(DEMO_STUDY, "", "statistics")[2] == gr.skip()  # another tab is open

    # A second start: the run on this task set is stored, so nothing is called or stored again.
    with session_scope(engine) as session:
        [stored] = examiner_runs(session)
        first = (stored.id, stored.updated_at, len(examiner_examples(session, stored.id)))
    calls = {p: p.stat().st_mtime for p in examination_folder(tmp_path, DEMO_STUDY).rglob("call.json")}
    again = time.monotonic()
    done = run_cli_process("demo", "examine", "--database-url", sqlite_url, "--data-root", tmp_path, *TINY)
    assert done.returncode == 0, done.stderr
    assert "cascaded done (stored before)" in done.stdout
    assert time.monotonic() - again < min(30.0, took)  # no model loaded, no call
    with session_scope(engine) as session:
        [stored] = examiner_runs(session)
        assert (stored.id, stored.updated_at, len(examiner_examples(session, stored.id))) == first
    assert {p: p.stat().st_mtime for p in examination_folder(tmp_path, DEMO_STUDY).rglob("call.json")} == calls
    engine.dispose()


def test_the_progress_says_why_a_system_failed_and_when_its_process_is_gone():
    now = datetime.now(timezone.utc)
    failed = SystemProgress("predictive", "predictive", "failed", 1, 4, error="ModelError: no judge checkpoint")
    progress = ExaminationProgress("demo", ("pause_handling",), 2, 0, "running",
                                   (SystemProgress("cascaded", "cascaded", "done", 4, 4), failed,
                                    SystemProgress("cascade-backchannel", "cascade-backchannel", "running", 3, 4)),
                                   beat_at=now.isoformat())
    head, why = progress.describe()
    assert head == ("Examining the demo study's systems in the background (pause handling, 2 example(s) each, "
                    "seed 0): cascaded done, predictive failed, cascade-backchannel 3 of 4 examples.")
    assert why == "predictive failed: ModelError: no judge checkpoint"
    # No news for a minute while it says it is working: its process is gone (the app stopped).
    gone = replace(progress, beat_at=(now - timedelta(minutes=5)).isoformat())
    assert gone.describe()[0].startswith("The background examination of the demo study's systems stopped")
    # Before any system: the task set could not be made, in one line.
    broken = replace(progress, state="failed", error="FileNotFoundError: espeak-ng")
    assert broken.describe()[0].endswith("failed (pause handling, 2 example(s) each, seed 0): FileNotFoundError: espeak-ng")
    waiting = replace(progress, state="waiting for the background analysis")
    assert ", waiting for the background analysis: cascaded done" in waiting.describe()[0]


def test_the_app_starts_the_examination_only_when_asked(sqlite_url, tmp_path):
    def examinations(app):
        return [hook.__self__ for hook in app.router.on_startup if isinstance(getattr(hook, "__self__", None),
                                                                            ExaminationProcess)]

    assert examinations(build_app(sqlite_url, tmp_path, "password")) == []  # tests and plain starts: nothing heavy
    [examination] = examinations(build_app(sqlite_url, tmp_path, "password", demo_examiner=True))
    command = examination.command
    assert command[1:4] == ["-m", "demo", "examine"] and command[command.index("--data-root") + 1] == str(tmp_path)
    assert command[command.index("--database-url") + 1] == sqlite_url and "--parent-pid" in command

"""The researcher view "Automatic benchmark": each study system's stored examiner row, the one of
its own kind and config, next to FDB's published rows and beside the study's measures; the
timeline of a stored example (a recorded run, tests/examiner/recorded_run.py)."""

from __future__ import annotations

import pytest

from analysis.examiner_figures import decision_sentence, example_timeline_figure
from analysis.views import LAYOUT, StudyAnalysis, examiner_view, study_view
from storage.db import session_scope
from storage.records import get_or_create_study, get_or_create_system, save_examiner_run
from tests.command_line import run_cli
from tests.examiner.recorded_run import ANSWER, TASKS, recorded_run


def test_each_system_shows_its_own_examiner_row(engine, tmp_path):
    with session_scope(engine) as session:
        study = get_or_create_study(session, "bench")
        get_or_create_system(session, study, "plain cascade", "cascaded")
        get_or_create_system(session, study, "yielding cascade", "cascaded", {"barge_in": "yield"})
        get_or_create_system(session, study, "baseline", "cascade-backchannel")
        get_or_create_system(session, study, "demo baseline", "full-duplex")  # the kind's alias in older demos
        summary = {"smooth_tor": 0.5, "smooth_latency_s": 1.2, "smooth_tor_ci95": [0.0, 1.0], "pause_tor": 0.0,
                   "backchannel_rate_ratio_switchboard": 2.3, "backchannel_timing_jsd_switchboard": 0.42,
                   "backchannel_timing_jsd_listener": 0.31}
        save_examiner_run(session, "cascaded", "cascaded", {}, {"seed": 0}, 14, summary, {}, "runs/cascaded")
        save_examiner_run(session, 'cascaded {"barge_in": "yield"}', "cascaded", {"barge_in": "yield"}, {"seed": 3},
                          14, {"smooth_tor": 1.0, "barge_in_stopped": 1.0}, {}, "runs/yield")
    view = study_view(StudyAnalysis(engine, "bench", tmp_path, compute=False), "examiner")
    assert view.title == LAYOUT["examiner"][0] == "Automatic benchmark"
    # the measures come right after the system, the long labels last: in view on a laptop's screen
    assert list(view.tables["examiner"].columns[:3]) == ["system", "pause_tor", "backchannel_tor"]
    assert list(view.tables["examiner"].columns[-3:]) == ["kind", "examined_as", "stored_at"]
    table = view.tables["examiner"].set_index("system")
    assert table.loc["plain cascade", "smooth_tor"] == 0.5 and table.loc["plain cascade", "smooth_latency_s"] == 1.2
    assert table.loc["plain cascade", "smooth_tor_ci95"] == "0.000-1.000"
    assert table.loc["plain cascade", "backchannel_rate_ratio_switchboard"] == 2.3
    assert table.loc["plain cascade", "backchannel_timing_jsd_switchboard"] == 0.42
    assert table.loc["plain cascade", "backchannel_timing_jsd_listener"] == 0.31
    assert table.loc["yielding cascade"].isna()["backchannel_timing_jsd_listener"]  # a run stored before it
    assert any("Switchboard's listeners" in note for note in view.notes)
    assert table.loc["yielding cascade", "smooth_tor"] == 1.0 and table.loc["yielding cascade", "task_set_seed"] == 3
    assert table.loc["baseline"].isna()["smooth_tor"] and table.loc["demo baseline"].isna()["smooth_tor"]
    assert table.loc["demo baseline", "examined_as"] == "cascade-backchannel"
    assert view.headline == {"systems_examined": 2, "systems": 4, "examples": 0}
    assert any("Not examined yet: cascade-backchannel" in note for note in view.notes)
    assert any("no offline equal" in note for note in view.notes)
    published = view.tables["published"].set_index("system")
    assert published.loc["Moshi (FDB v1.0, published)", "smooth_latency_s"] == pytest.approx(0.265)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    return recorded_run(tmp_path_factory.mktemp("recorded"))


def test_the_timeline_of_a_stored_example_and_the_examples_table(engine, recorded, tmp_path):
    with session_scope(engine) as session:
        study = get_or_create_study(session, "bench")
        get_or_create_system(session, study, "plain cascade", "cascaded")
    done = run_cli("examiner", "run", "--system", "cascaded", "--tasks", ",".join(TASKS), "--set", recorded.task_set,
                   "--out", recorded.run, "--store", "--url", engine.url.render_as_string(hide_password=False))
    assert done.returncode == 0, done.stderr
    analysis = StudyAnalysis(engine, "bench", tmp_path, compute=False)
    view = study_view(analysis, "examiner")
    examples = view.tables["examples"].set_index("task")
    assert list(examples.index) == list(TASKS) and (examples["system"] == "plain cascade").all()
    assert examples["interruption_judge"].isna().all()
    assert examples.loc["user_interruption", "stopped"] == 0.0  # the system talked on
    assert any(note.startswith("interruption_judge is empty: FDB rates") for note in view.notes)
    # The first example is drawn by default: both channels, the words, the decision.
    figure = view.figures["timeline"]
    names = {trace.name for trace in figure.data}
    assert {"user (input: what the system heard) waveform", "system (output) waveform", "user speech (Silero)",
            "system speech (Silero)", "system words (ASR)", "take-over turn (TOR 1)", "latency"} <= names
    words = next(t for t in figure.data if t.name == "system words (ASR)")
    assert " ".join(words.text) == ANSWER
    known = recorded.known["smooth_turn_taking"]
    assert figure.layout.title.text.startswith("plain cascade / smooth_turn_taking / 0<br><sup>TOR 1: 7 word(s)")
    assert f"latency {known['answer'][0] - known['turn_end']:.2f} s" in figure.layout.title.text
    # Another example, chosen: the interruption, and the stop time of a system that went on.
    chosen = int(examples.loc["user_interruption", "example_id"])
    other = examiner_view(analysis, chosen)
    names = {trace.name for trace in other.figures["timeline"].data}
    assert {"interruption", "stop time (went on)"} <= names
    assert other.headline["timeline_example"] == "plain cascade / user_interruption / 0"
    # The examiner's row, beside the study's measures (no sessions yet: the study's side is empty).
    beside = view.tables["beside_study"]
    assert set(beside["system"]) == {"plain cascade"} and beside["study"].isna().all()
    latency = beside.set_index("examiner_measure").loc["smooth_latency_s", "examiner"]
    assert latency == pytest.approx(view.tables["examiner"].set_index("system").loc["plain cascade", "smooth_latency_s"])


def test_a_run_stored_without_examples_says_how_to_store_them(engine, tmp_path):
    with session_scope(engine) as session:
        study = get_or_create_study(session, "bench")
        get_or_create_system(session, study, "plain cascade", "cascaded")
        save_examiner_run(session, "cascaded", "cascaded", {}, {"seed": 0}, 14, {"smooth_tor": 0.5}, {}, "runs/x")
    view = study_view(StudyAnalysis(engine, "bench", tmp_path, compute=False), "examiner")
    assert "timeline" not in view.figures and not len(view.tables["examples"])
    assert any("No per-example timeline stored" in note for note in view.notes)


def test_a_false_barge_in_is_named_beside_the_study(engine, tmp_path):
    with session_scope(engine) as session:
        study = get_or_create_study(session, "bench")
        get_or_create_system(session, study, "baseline", "cascade-backchannel")
        save_examiner_run(session, "cascade-backchannel", "cascade-backchannel", {}, {"seed": 0}, 14,
                          {"false_barge_in_noise": 1.0, "false_barge_in_background": 1.0,
                           "false_barge_in_backchannel": 0.0, "barge_in_stopped": 1.0}, {}, "runs/baseline")
    view = study_view(StudyAnalysis(engine, "bench", tmp_path, compute=False), "examiner")
    assert any("baseline: the examiner says it stops for sound not addressed to it (noise, background)" in note
               for note in view.notes)
    beside = view.tables["beside_study"].set_index("examiner_measure")
    assert beside.loc["false_barge_in_noise", "examiner"] == 1.0
    assert beside.loc["false_barge_in_noise", "study_measure"] == "overlap % of time"


def test_a_run_stored_under_the_kinds_former_name_still_shows(engine, tmp_path):
    with session_scope(engine) as session:  # a database from before cascade-backchannel was renamed
        study = get_or_create_study(session, "bench")
        get_or_create_system(session, study, "demo baseline", "full-duplex")
        save_examiner_run(session, "full-duplex-baseline", "full-duplex-baseline", {}, {"seed": 0}, 14,
                          {"smooth_tor": 0.25}, {}, "runs/baseline")
    view = study_view(StudyAnalysis(engine, "bench", tmp_path, compute=False), "examiner")
    table = view.tables["examiner"].set_index("system")
    assert table.loc["demo baseline", "smooth_tor"] == 0.25
    assert table.loc["demo baseline", "examined_as"] == "full-duplex-baseline"
    assert view.headline["systems_examined"] == 1


def test_the_figure_draws_a_backchannel_scan_and_a_pause():
    """Timelines of the two tasks the recorded run lacks, in the form examiner/timelines.py writes."""
    base = {"duration_s": 10.0, "channels": {"user": {"speech": [[0.5, 2.0], [3.5, 5.0]], "min": [-0.1] * 4,
                                                      "max": [0.1] * 4},
                                             "system": {"speech": [[2.2, 2.6]], "min": [0.0] * 4, "max": [0.0] * 4}},
            "words": [{"text": "mm-hmm", "start": 2.2, "end": 2.6}],
            "user_text": [{"text": "so I went to the store", "start": 0.5, "end": 5.0}]}
    scan = example_timeline_figure({**base, "task": "backchannel", "marks": {"turn_end_s": 5.0, "pauses": [[2.0, 3.5]]},
                                    "decision": {"rule": "FDB backchannel scan", "tor": 0, "backchannels": [[2.2, 2.6]],
                                                 "frequency_per_s": 0.1, "jsd": 0.5, "words_from": "given"}})
    names = {t.name for t in scan.data}
    assert {"backchannels (FDB scan)", "monologue pauses", "system words (ASR)"} <= names
    assert "TOR 0: 1 backchannel(s), 0.100/s" in scan.layout.title.text
    pause = {**base, "task": "pause_handling", "marks": {"turn_end_s": 5.0, "pause": [2.0, 3.5]},
             "decision": {"rule": "FDB take-over", "tor": 0, "words": 1, "turn": [2.2, 2.6], "user_end_s": None,
                          "latency_s": None, "words_from": "given"}}
    figure = example_timeline_figure(pause)
    assert {"pause", "take-over turn (TOR 0)"} <= {t.name for t in figure.data}
    assert decision_sentence(pause) == "TOR 0: 1 word(s) over 0.40 s from 2.20 s (under 1 s with at most 3 words)"

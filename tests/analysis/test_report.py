"""`python -m analysis demo | report | export-dataset` end to end, as a researcher runs them: the
simulated demo study seeded into a fresh SQLite file, its report (self-contained HTML, CSV and
Parquet of every table, headline JSON equal to the analysis functions' numbers), its Hugging
Face dataset, and one-line errors. The demo's cascaded system carries a stored examiner run (a
recorded run, tests/examiner/recorded_run.py): its examples' timelines are in the report, its row
beside the study's measures, its examples in the dataset.
"""

from __future__ import annotations

import hashlib
import html
import json
from pathlib import Path

import datasets
import pandas as pd
import pytest
import torch
from sqlmodel import Session, func, select

from analysis.study_metrics import human_summary, table_two
from analysis.views import LAYOUT, StudyAnalysis
from judge.model import JudgeConfig, JudgeModel, save_checkpoint
from storage import db
from storage.demo import DEMO_SYSTEMS
from storage.models import Judgment, Recording
from tests import command_line
from tests.command_line import run_cli
from tests.examiner.recorded_run import TASKS as EXAMINED_TASKS
from tests.examiner.recorded_run import recorded_run



def run(*args, check=True, process=False):
    """`python -m analysis ARGS`: its `main(argv)` in this process (an interpreter start with its
    imports costs seconds a call), or the real process."""
    result = (command_line.run_cli_process if process else command_line.run_cli)("analysis", *args)
    if check:
        assert result.returncode == 0, result.stderr
    return result


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """(data root, judge checkpoint, report folder) after `demo` and `report`."""
    root = tmp_path_factory.mktemp("demo")
    torch.manual_seed(0)
    checkpoint = root / "judge.pt"
    save_checkpoint(JudgeModel(JudgeConfig(hidden_size=16, head_hidden=32)), checkpoint)
    seeded = json.loads(run("demo", "--data-root", root, "--sessions-per-system", 2, "--seconds", 40,
                            process=True).stdout)
    assert seeded["sessions"] == 6 and seeded["pairs"]["controls"] == 4 and seeded["pairs"]["attention"] == 2
    # Seeding again leaves the study alone.
    assert "skipped" in json.loads(run("demo", "--data-root", root).stdout)
    # the demo's cascaded system, examined (its kind and config, as a researcher stores it)
    recorded = recorded_run(root / "examiner")
    done = run_cli("examiner", "run", "--system", "cascaded", "--config", json.dumps(DEMO_SYSTEMS[0][2]),
                   "--tasks", ",".join(EXAMINED_TASKS), "--set", recorded.task_set, "--out", recorded.run,
                   "--store", "--url", f"sqlite:///{root / db.DATABASE_FILENAME}")
    assert done.returncode == 0, done.stderr
    out = root / "report"
    run("report", "--study", "demo", "--out", out, "--data-root", root, "--checkpoint", checkpoint)
    return root, checkpoint, out


def engine_of(root):
    return db.make_engine(f"sqlite:///{root / db.DATABASE_FILENAME}")


def test_report_is_one_self_contained_page_with_every_figure(demo):
    _, _, out = demo
    page = (out / "report.html").read_text()
    assert "<script src=" not in page  # plotly.js is inlined: the page works offline
    assert page.count("window.PlotlyConfig") == 1  # ... once
    # + every recorded session's timeline, + every examined example's
    figures = sum(len(figs) for _, figs, _ in LAYOUT.values()) + 6 + 2
    assert page.count('class="plotly-graph-div"') == figures
    assert "6 of 6 sessions shown one by one below: every session with a recording." in page
    assert "SIMULATED demo data" in page


def test_every_table_as_csv_and_parquet(demo):
    _, _, out = demo
    csvs = sorted((out / "tables").glob("*.csv"))
    expected = {f"{key}__{name}" for key, (_, _, names) in LAYOUT.items() for name in names}
    assert expected <= {p.stem for p in csvs}
    for csv in csvs:
        parquet = pd.read_parquet(csv.with_suffix(".parquet"))
        # ("NA", the judge's no-activity label, is a label here, not a missing value.)
        table = pd.read_csv(csv, keep_default_na=False, na_values=[""])
        pd.testing.assert_frame_equal(table, parquet, check_dtype=False, check_exact=False, rtol=1e-9)


def test_report_and_tables_give_intervals_with_their_unit(demo):
    _, _, out = demo
    page = (out / "report.html").read_text()
    assert "95 % CI over 2 sessions" in page and "bootstrap over sessions" in page
    agreement = pd.read_csv(out / "tables" / "judge__agreement.csv")
    with_two = agreement[agreement["sessions"] == 2]
    assert len(with_two) and (with_two["interval"] == "95 % CI over 2 sessions").all()
    assert agreement["ci_low_percent"].min() >= 0 and agreement["ci_high_percent"].max() <= 100
    bench = pd.read_csv(out / "tables" / "naturalness__benchmark_validation.csv").set_index("type")
    assert bench.loc["all", "interval"] == f"95 % CI over {bench.loc['all', 'sources']} source conversations"
    assert 0 <= bench.loc["all", "accuracy_ci_low"] <= bench.loc["all", "pair_accuracy"] <= bench.loc[
        "all", "accuracy_ci_high"] <= 1
    stats = pd.read_csv(out / "tables" / "statistics__statistics.csv").set_index("measure")
    assert stats.loc["overlap % of time", "cascaded ci low"] >= 0
    assert (stats["cascaded interval"] == "95 % CI over 2 sessions").all()


def test_the_report_carries_both_switchboard_references_and_how_sessions_were_measured(demo):
    _, _, out = demo
    stats = pd.read_csv(out / "tables" / "statistics__statistics.csv")
    assert list(stats.columns[1:3]) == ["Switchboard (word alignments)", "Switchboard (session pipeline)"]
    fto = pd.read_csv(out / "tables" / "statistics__floor_transfer_offsets.csv")
    assert fto["series"].tolist()[:2] == ["Switchboard (word alignments)", "Switchboard (session pipeline)"]
    page = (out / "report.html").read_text()
    assert "Switchboard (session pipeline) is the like-with-like comparison" in page
    assert "docs/pipeline-bias.md" in page
    sessions = pd.read_csv(out / "tables" / "statistics__session_statistics.csv")
    assert {"boundary correction onset ms", "boundary correction offset ms", "backchannels from"} <= set(sessions.columns)
    assert sessions["backchannels from"].notna().all()


def test_each_session_has_its_transcript_in_the_report_and_the_export(demo, tmp_path):
    """The simulated sessions have words on both channels and no timing log: the transcript is
    both channels' recognised words with their times, in the report's session tables and the
    dataset's transcripts."""
    root, _, out = demo
    run("export-dataset", "--study", "demo", "--out", tmp_path / "ds", "--data-root", root)
    exported = datasets.load_from_disk(str(tmp_path / "ds"))["transcripts"].to_pandas()
    stored = {row["session_id"]: json.loads(row["voice_activity"])
              for row in datasets.load_from_disk(str(tmp_path / "ds"))["sessions"]}
    assert set(exported["session_id"]) == set(stored)
    for session_id, rows in exported.groupby("session_id"):
        assert set(rows["speaker"]) == {"participant", "system"} and (rows["source"] == "asr").all()
        assert rows["cut"].isna().all() and (rows["end_s"] >= rows["start_s"]).all()
        # every recognised word is in its channel's rows, inside the row's times
        words = stored[session_id]["words"]
        for channel, speaker in ((0, "participant"), (1, "system")):
            said = rows[rows["speaker"] == speaker]
            assert " ".join(said["text"]).split() == [w for _, _, w in sorted(words[channel])]
            assert said["start_s"].iloc[0] == pytest.approx(min(s for s, _, _ in words[channel]), abs=1e-3)
        table = pd.read_csv(out / "tables" / f"session__session_{session_id}__transcript.csv")
        assert list(table["text"]) == list(rows["text"]) and list(table["time_s"]) == list(rows["start_s"])


def test_headline_numbers_equal_the_analysis_functions(demo):
    root, checkpoint, out = demo
    headline = json.loads((out / "headline.json").read_text())
    analysis = StudyAnalysis(engine_of(root), "demo", root, checkpoint)
    expected = table_two(human_summary(analysis.data)).set_index("statistic")["value"]
    assert headline["human"]["all"]["natural preference rate"] == pytest.approx(expected["natural preference rate"])
    assert headline["overview"]["sessions"] == 6 and headline["overview"]["annotators"] == 10
    table = pd.read_csv(out / "tables" / "statistics__statistics.csv").set_index("measure")
    assert headline["statistics"]["cascaded"]["gap_per_minute"] == pytest.approx(table.loc["gap /min", "cascaded"])
    assert headline["judge"]["judge"]["sha256"] == hashlib.sha256(Path(checkpoint).read_bytes()).hexdigest()


def test_the_examiner_examples_and_the_study_beside_them(demo):
    _, _, out = demo
    page = (out / "report.html").read_text()
    for task in EXAMINED_TASKS:
        assert f"Examiner example: cascaded / {task} / 0" in page
    assert "2 of 2 stored examiner examples" in page
    assert "interruption_judge is empty: FDB rates interruption answers with GPT-4-turbo" in page
    examples = pd.read_csv(out / "tables" / "examiner__examples.csv")
    assert sorted(examples["task"]) == sorted(EXAMINED_TASKS) and examples["interruption_judge"].isna().all()
    examiner = pd.read_csv(out / "tables" / "examiner__examiner.csv").set_index("system")
    assert examiner["interruption_judge"].isna().all()
    # The study's side is the statistics view's own numbers; the examiner's side its own row.
    beside = pd.read_csv(out / "tables" / "examiner__beside_study.csv")
    assert set(beside["system"]) == {"cascaded"}  # the baseline is not examined
    row = beside.set_index(["examiner_measure", "study_measure"])
    headline = json.loads((out / "headline.json").read_text())["statistics"]["cascaded"]
    fto = row.loc[("smooth_latency_s", "floor-transfer offset median s")]
    assert fto["study"] == pytest.approx(headline["floor_transfer_offset_median_s"])
    assert fto["examiner"] == pytest.approx(examiner.loc["cascaded", "smooth_latency_s"])
    assert row.loc[("smooth_tor", "gap /min"), "study"] == pytest.approx(headline["gap_per_minute"])
    assert row.loc[("barge_in_stopped", "user interruptions that took the floor %"), "examiner"] == 0.0
    # the recorded system answers 0.6 s after the question; the simulated cascade's median offset is longer
    assert ("Where they disagree: cascaded: the examiner's latency after a complete question is 0.60 s, the study's "
            f"median floor-transfer offset {fto['study']:.2f} s") in html.unescape(page)


def test_naturalness_ranks_the_slow_cascade_below_the_cascade_with_timers_below_people(tmp_path):
    """The default demo (6 sessions of 90 s per system, as `make run` seeds it): its cascaded system
    answers after long gaps, and the default scorer must say so; both simulated systems fall below
    Switchboard conversation cut to the sessions' length and scored the same way."""
    run("demo", "--data-root", tmp_path, "--no-audio")
    out = tmp_path / "report"
    run("report", "--study", "demo", "--out", out, "--data-root", tmp_path)
    naturalness = json.loads((out / "headline.json").read_text())["naturalness"]
    assert naturalness["scorer"] == "timing-hazard-words"
    per_system = naturalness["per_system"]
    [people] = [v for k, v in per_system.items() if k.startswith("Switchboard human-human")]
    assert per_system["cascaded"] < per_system["cascade-backchannel"] < people
    assert per_system["predictive"] < people
    assert set(naturalness["by_scorer"]) == {"timing-hazard", "timing-hazard-words", "durations", "turnnat-va"}
    assert naturalness["by_scorer"]["timing-hazard-words"]["cascaded"] == pytest.approx(per_system["cascaded"])
    # Each session says where its least likely 6 s begin, inside the session.
    sessions = pd.read_csv(out / "tables" / "naturalness__naturalness_per_session.csv")
    assert len(sessions) == 18
    assert ((sessions.least_natural_6s_start_s >= 0) & (sessions.least_natural_6s_start_s <= sessions.duration_s - 6)).all()
    page = (out / "report.html").read_text()
    assert "Scorer: <strong>timing-hazard-words</strong>" in page or "Scorer: **timing-hazard-words**" in page


def test_report_without_a_judge_says_so_and_keeps_the_other_views(demo, tmp_path):
    root, _, _ = demo
    out = tmp_path / "report"
    run("report", "--study", "demo", "--out", out, "--data-root", root, "--checkpoint", tmp_path / "missing.pt")
    page = (out / "report.html").read_text()
    assert "No judge model: judge checkpoint not found" in page
    assert (out / "tables" / "statistics__statistics.csv").is_file()
    assert not (out / "tables" / "judge__agreement.csv").exists()


def test_unknown_study_is_a_one_line_error(demo, tmp_path):
    root, _, _ = demo
    result = run("report", "--study", "nope", "--out", tmp_path, "--data-root", root, check=False)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == ["error: no study named 'nope' (studies: 'demo')"]


def test_dataset_export_round_trips(demo, tmp_path):
    root, checkpoint, _ = demo
    run("export-dataset", "--study", "demo", "--out", tmp_path / "ds", "--data-root", root)
    dataset = datasets.load_from_disk(str(tmp_path / "ds"))
    assert set(dataset) == {"sessions", "transcripts", "pairs", "judgments", "examiner_examples", "questionnaire"}
    examined = dataset["examiner_examples"].to_pandas().set_index("task")
    assert examined.loc["smooth_turn_taking", "tor"] == 1 and examined["interruption_judge"].isna().all()
    assert examined.loc["user_interruption", "interruption_judge_note"].startswith("FDB rates interruption answers")
    assert examined.loc["user_interruption", "stopped"] == False  # noqa: E712 (numpy bool)
    timeline = json.loads(examined.loc["user_interruption", "timeline"])
    assert timeline["marks"]["event_name"] == "interruption" and timeline["words"]
    with Session(engine_of(root)) as session:
        recordings = {r.session_id: r for r in session.exec(select(Recording))}
        judgments = session.exec(select(func.count()).select_from(Judgment)).one()
    sessions = dataset["sessions"]
    assert len(sessions) == 6 and sorted(sessions["system"]) == ["cascade-backchannel", "cascade-backchannel",
                                                                 "cascaded", "cascaded", "predictive", "predictive"]
    for row in sessions:
        # The recording's bytes, unchanged; its voice activity as JSON.
        assert hashlib.sha256(row["audio"]["bytes"]).hexdigest() == recordings[row["session_id"]].sha256
        assert json.loads(row["voice_activity"])["duration"] == pytest.approx(40.0)
        assert row["voice_activity_method"] == "simulated (demo)"
    assert isinstance(sessions.features["audio"], datasets.Audio)
    frame = dataset["judgments"].to_pandas()
    assert len(frame) == judgments
    expected = StudyAnalysis(engine_of(root), "demo", root, checkpoint).data.judgments
    assert (frame["choice"] == "natural").sum() == (expected["choice"] == "natural").sum()
    assert set(dataset["pairs"]["trial"]) == {"formal", "artifact_control", "attention"}
    formal = dataset["pairs"].to_pandas().query("trial == 'formal'")
    assert formal["source"].str.startswith("demo human-human").all()  # the unit intervals resample

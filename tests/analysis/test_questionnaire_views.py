"""The researcher side of the questionnaire: answers stored as the participant API stores them, read
back per call and participant, shown by the "Questionnaire" and "What people felt vs the measures"
views with the numbers the statistics give on the same answers, exported in the dataset and
written in the report; the demo's answers are made the same way every time.

A study of simulated calls (voice activity only, analysis.demo_study's simulator): six participants
each talk to a slow and a quick system, half of them slow first, and answer a questionnaire of the
study file's own (a 5-point and a reverse-keyed 7-point scale, a choice, a comment; after the last
call a ranking and a pick). The background's work is done in the fixture, as the worker does it.
"""

from __future__ import annotations

import json
import time

import datasets
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from analysis.dataset import export_dataset
from analysis.measure_tracking import CORRECTION
from analysis.demo_study import HUMAN, SYSTEM_PROFILES, _voice_activity_result, simulate_conversation
from analysis.questionnaire_answers import load_answers, session_measures
from analysis.questionnaire_demo import DemoCall, demo_responses, simulated_calls, store_demo_answers
from analysis.questionnaire_views import NO_ANSWERS, PENDING
from analysis.report import write_report
from analysis.study import load_study
from analysis.views import StudyAnalysis, study_view
from sqlmodel import select

from storage import db
from storage.db import session_scope
from storage.models import Participant, QuestionnaireResponse
from storage.records import end_session, get_or_create_participant, get_system, save_analysis_result, start_session
from studies.config import apply_config, parse_config
from tests.databases import engine  # noqa: F401  (pytest fixture: real SQLite and PostgreSQL databases)

QUESTIONNAIRE = {
    "after_call": [
        {"id": "right_time", "kind": "scale", "text": "It answered at the right time.", "points": 5,
         "labels": ["Strongly disagree", "Strongly agree"]},
        {"id": "made_me_wait", "kind": "scale", "text": "It made me wait.", "points": 7,
         "labels": ["Never", "All the time"], "reverse_keyed": True},
        {"id": "on_topic", "kind": "choice", "text": "Did it stay on topic?", "options": ["yes", "partly", "no"]},
        {"id": "comment", "kind": "text", "text": "Anything else?", "required": False},
    ],
    "after_last": [
        {"id": "ranking", "kind": "rank", "text": "Rank the systems, most natural first."},
        {"id": "best", "kind": "pick", "text": "Which was the most natural?"},
    ],
}
CONFIG = {"name": "felt", "questionnaire": QUESTIONNAIRE,
          "systems": [{"name": "slow", "kind": "cascaded"}, {"name": "quick", "kind": "cascade-backchannel"}]}
PROFILES = {"slow": SYSTEM_PROFILES["cascaded"], "quick": SYSTEM_PROFILES["cascade-backchannel"]}
# Per participant: (right_time, made_me_wait) for the slow system, then for the quick one.
ANSWERS = [((2, 6), (4, 2)), ((3, 5), (5, 1)), ((2, 7), (4, 3)), ((1, 6), (4, 2)), ((3, 4), (3, 2)), ((2, 5), (5, 1))]
COMMENTS = {(0, "slow"): "Long pauses.", (3, "quick"): "It cut in once."}


def _store(session, study, answers: list[tuple], answered: bool = True) -> None:
    """Sessions of six participants with both systems, and (`answered`) their answers; participant
    k meets the slow system first when k is even."""
    rng = np.random.default_rng(3)
    for k, (slow, quick) in enumerate(answers):
        participant = get_or_create_participant(session, study, external_id=f"person-{k}")
        order = ["slow", "quick"] if k % 2 == 0 else ["quick", "slow"]
        labels = {f"system-{n}": name for n, name in enumerate(order, 1)}
        for name in order:
            right_time, wait = slow if name == "slow" else quick
            row = start_session(session, participant, get_system(session, study, name), "hiking")
            end_session(session, row, "complete")
            conv = simulate_conversation((HUMAN, PROFILES[name]), 60.0, rng, source=f"{name} {k}")
            save_analysis_result(session, "voice-activity", f"session:{row.id}", {}, _voice_activity_result(conv),
                                 study)
            answer = {"right_time": right_time, "made_me_wait": wait,
                      "on_topic": "yes" if name == "quick" else "partly"}
            if (k, name) in COMMENTS:
                answer["comment"] = COMMENTS[(k, name)]
            if not answered:
                continue
            session.add(QuestionnaireResponse(participant_id=participant.id, session_id=row.id, part=f"call:{row.id}",
                                              answers=answer, systems=labels))
        quick_label = next(label for label, name in labels.items() if name == "quick")
        slow_label = next(label for label, name in labels.items() if name == "slow")
        ranking = [slow_label, quick_label] if k == 4 else [quick_label, slow_label]
        if answered:
            session.add(QuestionnaireResponse(participant_id=participant.id, part="after_last", systems=labels,
                                          answers={"ranking": ranking, "best": ranking[0]}))


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """(engine, data root) of the study "felt", before and after the background filled its cache:
    {"before": the views drawn from the empty cache}."""
    root = tmp_path_factory.mktemp("felt")
    engine = db.make_engine(f"sqlite:///{root / 'felt.db'}")
    db.init_db(engine)
    with session_scope(engine) as session:
        _store(session, apply_config(session, parse_config(CONFIG)), ANSWERS)
        apply_config(session, parse_config({**CONFIG, "name": "silent"}))  # a study nobody answered
    before = {key: study_view(StudyAnalysis(engine, "felt", root, compute=False), key)
              for key in ("questionnaire", "felt_vs_measures")}
    StudyAnalysis(engine, "felt", root).fill()  # what the background worker does
    yield engine, root, before
    engine.dispose()


def test_answers_are_read_back_per_call_and_participant(engine):  # noqa: F811
    with session_scope(engine) as session:
        _store(session, apply_config(session, parse_config(CONFIG)), ANSWERS)
    answers = load_answers(engine, load_study(engine, "felt"))
    assert answers.participants == 6 and answers.demo_participants == 0
    with session_scope(engine) as session:  # the views name people by pseudonym
        person_1 = session.exec(select(Participant.pseudonym).where(Participant.external_id == "person-1")).one()
    first = [r for r in answers.ratings if r.participant == person_1 and r.item == "right_time"]
    # person-1 met the quick system first: position 1 is its call
    assert sorted((r.position, r.system, r.value) for r in first) == [(1, "quick", 5), (2, "slow", 3)]
    assert len(answers.ratings) == 24  # 6 people x 2 calls x 2 scale items
    assert sorted(answers.rankings) == sorted([("slow", "quick")] + [("quick", "slow")] * 5)
    assert sorted(answers.picks) == sorted([("slow",)] + [("quick",)] * 5)
    assert answers.texts.set_index("comment")["system"].to_dict() == {"Long pauses.": "slow",
                                                                      "It cut in once.": "quick"}
    counts = answers.choices.set_index(["system", "option"])["answers"]
    assert counts[("quick", "yes")] == 6 and counts[("slow", "partly")] == 6 and counts[("slow", "yes")] == 0


def test_the_questionnaire_view_shows_each_systems_answers_tests_and_ranking(study):
    engine, root, before = study
    # before the background's pass: what is cheap is there, the tests and ranking are said to be coming
    assert PENDING in before["questionnaire"].notes and not len(before["questionnaire"].tables["tests"])
    assert len(before["questionnaire"].tables["items"]) == 4

    analysis = StudyAnalysis(engine, "felt", root, compute=False)
    view = study_view(analysis, "questionnaire")
    assert analysis.pending == {} and PENDING not in view.notes
    assert set(view.figures) == {"answers", "medians", "ranking", "order_effects"}
    items = view.tables["items"].set_index(["item", "system"])
    slow_wait = [slow[1] for slow, _ in ANSWERS]
    assert items.loc[("made_me_wait", "slow"), "median"] == np.median(slow_wait) == 5.5
    assert items.loc[("made_me_wait", "slow"), "reverse_keyed"]
    assert items.loc[("right_time", "quick"), "answer_counts"] == "3: 1, 4: 3, 5: 2"
    low, high = items.loc[("right_time", "quick"), ["median_ci_low", "median_ci_high"]]
    assert low <= 4.0 <= high

    tests = view.tables["tests"].set_index(["item", "factor"])
    row = tests.loc[("right_time", "system")]
    slow, quick = [s[0] for s, _ in ANSWERS], [q[0] for _, q in ANSWERS]
    expected = stats.wilcoxon(quick, slow)  # the systems in the study's order: slow, quick
    assert (row["test"], row["participants"]) == ("wilcoxon", 6)
    assert row["p"] == pytest.approx(expected.pvalue)
    assert row["effect_size_name"] == "rank-biserial r" and row["effect_size"] == pytest.approx(-1.0)
    assert "slow vs quick" in row["post_hoc_pairs"]
    assert tests.loc[("right_time", "call position"), "participants"] == 6

    ranking = view.tables["ranking"]
    assert list(ranking["system"]) == ["quick", "slow"]  # five of six ranked and picked it first
    assert (ranking["ci_low"] <= ranking["strength"]).all() and (ranking["strength"] <= ranking["ci_high"]).all()

    order = view.tables["order_effects"].set_index(["item", "position"])
    first_calls = [(s if k % 2 == 0 else q)[0] for k, (s, q) in enumerate(ANSWERS)]
    assert order.loc[("right_time", 1), "median"] == np.median(first_calls)
    assert set(view.tables["comments"]["comment"]) == {"Long pauses.", "It cut in once."}
    assert "6 participant(s) answered" in view.notes[0]


def test_what_people_felt_is_set_against_each_sessions_measures(study):
    engine, root, before = study
    # before the background's pass no session's statistics are there to set the answers against
    assert before["felt_vs_measures"].notes == ["No analysable session with its measures computed yet."]

    analysis = StudyAnalysis(engine, "felt", root, compute=False)
    view = study_view(analysis, "felt_vs_measures")
    table = view.tables["correlations"]
    measures = session_measures(analysis.data, analysis.statistics, analysis.judge_results,
                                analysis.session_naturalness, analysis.scorer, pd.DataFrame())
    assert len(measures) == 12
    # the wait people felt against the system's measured response latency, session by session
    wait = {r.session_id: r.value for r in load_answers(engine, analysis.data).ratings if r.item == "made_me_wait"}
    ids = sorted(wait)
    expected = stats.spearmanr([measures[i]["response latency (s)"] for i in ids], [wait[i] for i in ids])
    row = table[(table["measure"] == "response latency (s)") & (table["item"] == "made_me_wait")].iloc[0]
    assert row["rho"] == pytest.approx(expected.statistic)
    assert (row["sessions"], row["participants"], row["reverse_keyed"]) == (12, 6, True)
    assert row["corrected_ci_low"] <= row["ci_low"] <= row["rho"] <= row["ci_high"] <= row["corrected_ci_high"]
    assert row["reading"].startswith("higher response latency (s), ")
    assert {"FTO median (ms)", "system interruptions /min", "system backchannels /min"} <= set(table["measure"])
    assert any(m.startswith("naturalness (") for m in table["measure"])
    # the heatmap: measures x items, every cell with its sessions, the corrected ones marked
    heatmap = view.figures["correlations"].data[0]
    assert list(heatmap.x) == ["made_me_wait (higher = worse)", "right_time"]
    assert len(heatmap.y) == table["measure"].nunique()
    assert all("n=12" in cell for line in heatmap.text for cell in line if cell)
    marked = sum("*" in cell for line in heatmap.text for cell in line)
    assert marked == int(table["distinguishable"].sum())
    assert view.notes[0].startswith("**12 sessions from 6 participants: ")
    assert any(f"Correction: {CORRECTION}" in note for note in view.notes)


def test_a_study_without_answers_says_so(study):
    engine, root, _ = study
    analysis = StudyAnalysis(engine, "silent", root, compute=False)
    for key in ("questionnaire", "felt_vs_measures"):
        view = study_view(analysis, key)
        assert view.notes == [NO_ANSWERS] and not view.figures and not view.tables
    assert analysis.pending == {}


def test_the_dataset_and_the_report_carry_the_answers(study, tmp_path):
    engine, root, _ = study
    analysis = StudyAnalysis(engine, "felt", root, compute=False)
    rows = datasets.load_from_disk(str(export_dataset(analysis, tmp_path / "dataset")))["questionnaire"].to_pandas()
    # 12 calls x 3 answered items + 2 comments, and 6 x 2 after the last call
    assert len(rows) == 12 * 3 + 2 + 6 * 2
    with session_scope(engine) as session:  # named by pseudonym, never by their Prolific IDs
        pseudonym = dict(session.exec(select(Participant.external_id, Participant.pseudonym)).all())
    assert not set(rows["participant"]) & set(pseudonym) and set(rows["participant"]) <= set(pseudonym.values())
    wait = rows[(rows["participant"] == pseudonym["person-1"]) & (rows["item"] == "made_me_wait")].set_index("system")
    assert wait.loc["quick", "position"] == 1 and wait.loc["quick", "scale_value"] == 1.0
    assert wait.loc["slow", "part"] == f"call:{int(wait.loc['slow', 'session_id'])}"
    last = rows[(rows["participant"] == pseudonym["person-4"]) & (rows["part"] == "after_last")].set_index("item")
    assert json.loads(last.loc["ranking", "value"]) == ["slow", "quick"] and last.loc["best", "value"] == "slow"
    assert last["session_id"].isna().all()

    html_file = write_report(StudyAnalysis(engine, "felt", root), tmp_path / "report")
    text = html_file.read_text()
    assert "<h2>Questionnaire</h2>" in text and "<h2>What people felt vs the measures</h2>" in text
    assert (tmp_path / "report/tables/questionnaire__tests.csv").is_file()
    headline = json.loads((tmp_path / "report/headline.json").read_text())
    assert headline["questionnaire"]["ranking"] == ["quick", "slow"]
    assert headline["felt_vs_measures"]["participants"] == 6


def test_the_demos_answers_are_plausible_and_the_same_every_time(study):
    engine, _, _ = study
    calls = [DemoCall(k, k // 3, system, latency, 0.0)
             for k, (system, latency) in enumerate([("a", 0.4), ("b", 2.5), ("c", 1.2)] * 20)]
    once = demo_responses(parse_config(CONFIG).call_questionnaire(3), calls, seed=5)
    assert once == demo_responses(parse_config(CONFIG).call_questionnaire(3), calls, seed=5)
    waits = {s: [r["answers"]["made_me_wait"] for r in once if r["part"] != "after_last"
                 and calls[r["session_id"]].system == s] for s in "abc"}
    assert np.mean(waits["a"]) < np.mean(waits["c"]) < np.mean(waits["b"])  # the longer the wait, the more felt
    assert sum(r["part"] == "after_last" for r in once) == 20
    # stored for the simulated sessions once: a second time stores nothing
    with session_scope(engine) as session:
        _store(session, apply_config(session, parse_config({**CONFIG, "name": "simulated"})), ANSWERS, answered=False)
    with session_scope(engine) as session:
        study_row = apply_config(session, parse_config({**CONFIG, "name": "simulated"}))
        started = time.perf_counter()
        assert store_demo_answers(session, study_row, simulated_calls(session, study_row.id)) == 12 + 6
        assert time.perf_counter() - started < 5
        assert store_demo_answers(session, study_row, simulated_calls(session, study_row.id)) == 0

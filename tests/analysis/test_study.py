"""The researcher views' numbers on a small study built by hand in a real SQLite database, against
values worked out by hand: statistics per system with their per-session spread, the overview
counts, judgments turned into natural/perturbed terms, annotator exclusion, TurnNat against
people, the benchmark table, the per-session cache and its invalidation, the session view.

(Wilson, preference rate, majority agreement, Krippendorff and the C-index themselves are tested
in test_agreement.py and test_intervals.py.)
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import soundfile
import torch
from sqlmodel import Session, func, select

from analysis.figures import EVENT_LABELS
from analysis.references import PIPELINE_REFERENCE, WORD_REFERENCE, References, reference_notes
from analysis.session_view import decisions_table, waveform_envelope
from analysis.study import (
    PAIRS_JUDGED,
    RECORDED,
    StudyData,
    annotation_progress,
    annotator_completion,
    clip_pair_counts,
    clock_duration,
    demo_note,
    load_study,
    real_data_counts,
    sessions_per_system,
)
from analysis.study_metrics import (
    annotator_table,
    benchmark_validation,
    clip_ratings,
    exclusion_effect,
    floor_transfer_table,
    human_summary,
    metric_people_agreement,
    naturalness_reference_row,
    naturalness_table,
    pair_preferences,
    per_type_table,
    rating_correlation,
    statistics_table,
    suggested_exclusions,
    table_two,
    user_interruption_table,
)
from analysis.study_sessions import (
    _judge_one,
    instances_from_json,
    load_study_judge,
    session_conversations,
    store_judge_reference,
)
from analysis.views import (
    StudyAnalysis,
    human_view,
    judge_view,
    session_view,
    statistics_view,
)
from judge.metrics import Instances, conversation_instances, summarize
from judge.model import JudgeConfig, JudgeModel, save_checkpoint
from judge.thresholds import JudgeThresholds
from naturalness.scorers import load_scorer
from speech.silero_lags import BOUNDARY_LAGS, CORRECTION
from storage import db
from storage.db import session_scope
from storage.models import AnalysisResult, Annotator, ClipPair, DialogueClip, Judgment
from storage.records import (
    add_recording,
    end_session,
    get_or_create_participant,
    get_or_create_study,
    get_or_create_system,
    hash_token,
    record_judgment,
    save_analysis_result,
    start_session,
)
from turntaking.activity import Conversation, conversation_to_json
from turntaking.reference import PIPELINE_REFERENCE_FILE, switchboard_reference
from turntaking.stats import conversation_statistics

# Two sessions of system "s1" (60 s each; IPUs of 4 s, 1 s gaps): A has 3 gaps, B one.
# One session of "s2" (60 s) where the system starts 0.5 s before the participant stops: one overlap.
SESSION_A = [[(0.5, 4.5), (10.5, 14.5)], [(5.5, 9.5), (15.5, 19.5)]]
SESSION_B = [[(0.5, 4.5)], [(5.5, 9.5)]]
SESSION_C = [[(0.5, 4.5)], [(4.0, 8.0)]]


def va(activity, duration=60.0) -> dict:
    return conversation_to_json(Conversation(duration, (activity[0], activity[1])))


def clip(session, study, activity) -> int:
    row = DialogueClip(study_id=study.id, activity=va(activity, 10.0), start_s=0, end_s=10, duration_s=10)
    session.add(row)
    session.flush()
    return row.id


# The views name annotators by pseudonym (annotator-N): x, y and z are the study's first three.
X, Y, Z = "annotator-1", "annotator-2", "annotator-3"


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """(engine, data root) of the hand-made study "hand"."""
    root = tmp_path_factory.mktemp("study")
    engine = db.make_engine(f"sqlite:///{root / 'study.db'}")
    db.init_db(engine)
    with session_scope(engine) as s:
        st = get_or_create_study(s, "hand", title="Hand-made study")
        s1 = get_or_create_system(s, st, "s1", "cascaded")
        s2 = get_or_create_system(s, st, "s2", "cascade-backchannel")
        p1 = get_or_create_participant(s, st, external_id="p1")
        p2 = get_or_create_participant(s, st, external_id="p2")
        for participant, system, activity, status in ((p1, s1, SESSION_A, "complete"), (p2, s1, SESSION_B, "complete"),
                                                      (p1, s2, SESSION_C, "incomplete")):
            conv = start_session(s, participant, system, "a topic")
            end_session(s, conv, status)
            save_analysis_result(s, "voice-activity", f"session:{conv.id}", {}, va(activity), st)
            if activity is SESSION_A:  # one real recording: 2.0 s of two-channel audio
                (root / "rec").mkdir()
                soundfile.write(str(root / "rec" / "a.wav"), np.zeros((32000, 2), np.float32), 16000)
                add_recording(s, "rec/a.wav", kind="two-channel", data_root=root, conversation=conv, system_channel=1)
        speech = [[(1.0, 3.0)], [(4.0, 6.0)]]
        pairs = {}
        cut = {"edit": {"source": "sw-1"}}  # both formal pairs cut from one conversation
        for pair_id, kind, flags in (("p1", "late_response", cut), ("p2", "early_entry", cut),
                                     ("c1", "artifact_control", {"is_artifact_control": True}),
                                     ("a1", "attention_check", {"is_attention_check": True})):
            row = ClipPair(study_id=st.id, pair_id=pair_id, perturbation=kind, natural_clip_id=clip(s, st, speech),
                           perturbed_clip_id=clip(s, st, speech), **flags)
            s.add(row)
            s.flush()
            pairs[pair_id] = row.id
        people = {}
        for name in ("x", "y", "z"):
            row = Annotator(study_id=st.id, token_hash=hash_token(f"hand-{name}"), external_id=name)
            s.add(row)
            s.flush()
            people[name] = row.id
        # (annotator, pair, natural side, choice, rating A, rating B, artifact A, artifact B)
        for who, pair, natural, choice, ra, rb, aa, ab in (
            ("x", "p1", "A", "A", 4, 2, None, None),  # natural, ratings natural 4 / perturbed 2
            ("y", "p1", "B", "A", 3, 2, None, None),  # perturbed (natural is B): natural 2 / perturbed 3
            ("z", "p1", "B", "B", 1, 5, None, None),  # natural: natural 5 / perturbed 1
            ("x", "p2", "A", "A", 5, 3, None, None),  # natural
            ("y", "p2", "A", "B", 2, 4, None, None),  # perturbed
            ("x", "c1", "B", "B", 3, 3, 4, 2),  # artifact control: natural (B) 2, perturbed (A) 4
            ("x", "a1", "A", "A", 5, 1, None, None),  # attention check passed
            ("y", "a1", "A", "B", 1, 5, None, None),  # attention check failed
        ):
            record_judgment(s, Judgment(annotator_id=people[who], clip_pair_id=pairs[pair], natural_side=natural,
                                        choice=choice, rating_a=ra, rating_b=rb, artifact_rating_a=aa,
                                        artifact_rating_b=ab, response_s=10.0 if who != "y" else 2.0))
    return engine, root


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """A freshly initialised small voice-activity judge (the views need a model, not a good one)."""
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("judge") / "judge.pt"
    save_checkpoint(JudgeModel(JudgeConfig(hidden_size=16, head_hidden=32)), path)
    return path


def test_statistics_per_system_pool_sessions_and_give_their_spread(study):
    engine, root = study
    view = statistics_view(StudyAnalysis(engine, "hand", root))
    table = view.tables["statistics"].set_index("measure")
    # s1: 3 + 1 gaps in 2 minutes; per session 3/min and 1/min: mean 2, sd sqrt(2).
    assert table.loc["gap /min", "s1"] == pytest.approx(2.0)
    assert table.loc["gap /min", "s1 session mean"] == pytest.approx(2.0)
    assert table.loc["gap /min", "s1 session sd"] == pytest.approx(math.sqrt(2))
    # Gap time: 3 s and 1 s of 120 s.
    assert table.loc["gap % of time", "s1"] == pytest.approx(100 * 4 / 120)
    assert table.loc["overlap /min", "s1"] == 0
    # s2: one 0.5 s overlap in one minute; one session, so its sd is 0.
    assert table.loc["overlap /min", "s2"] == pytest.approx(1.0)
    assert table.loc["overlap % of time", "s2"] == pytest.approx(100 * 0.5 / 60)
    assert table.loc["overlap /min", "s2 session sd"] == 0
    # Intervals over sessions: s1's two sessions (3 and 1 gaps a minute) give [1, 3] (one of
    # them twice at the extremes), where mean +- sd ran from 0.59 to 3.4; s2's one session, none.
    assert (table.loc["gap /min", "s1 ci low"], table.loc["gap /min", "s1 ci high"]) == (
        pytest.approx(1.0), pytest.approx(3.0))
    assert table.loc["gap /min", "s1 interval"] == "95 % CI over 2 sessions"
    assert table.loc["gap % of time", "s1 ci low"] == pytest.approx(100 * 1 / 60)
    assert pd.isna(table.loc["overlap /min", "s2 ci low"]) and table.loc["overlap /min", "s2 interval"] == "n/a: 1 session"
    bars = [t for t in view.figures["statistics"].data if t.name == "s1"]
    gap = EVENT_LABELS["gap"]
    for bar in bars:
        i = list(bar.x).index(gap)
        assert bar.y[i] - bar.error_y.arrayminus[i] >= 0 and bar.y[i] + bar.error_y.array[i] <= (
            100 if bar.yaxis == "y2" else float("inf"))
        assert "session sd" in bar.hovertemplate and "95 % CI over 2 sessions" in bar.hovertemplate
    # No words: no speaking rate (not zero).
    assert table.loc["words /min", "s1"] is None or pd.isna(table.loc["words /min", "s1"])
    per_session = view.tables["session_statistics"]
    assert per_session["gap /min"].tolist() == [3.0, 1.0, 0.0]
    assert per_session["floor transfers"].tolist() == [3, 1, 1]
    assert per_session["FTO median ms"].tolist() == [1000, 1000, -500]
    assert set(view.figures) == {"statistics", "floor_transfer_offsets", "session_spread"}


def test_statistics_view_shows_floor_transfer_offsets_next_to_switchboard(study):
    engine, root = study
    view = statistics_view(StudyAnalysis(engine, "hand", root))
    fto = view.tables["floor_transfer_offsets"].set_index("series")
    # s1: every turn starts 1 s after the other's ends (3 + 1 transfers); s2: B starts 0.5 s before A ends.
    assert fto.loc["s1", ["floor transfers", "p50 ms", "in overlap %"]].tolist() == [4, 1000, 0.0]
    assert fto.loc["s2", ["floor transfers", "p50 ms", "in overlap %"]].tolist() == [1, -500, 100.0]
    # Switchboard's word-alignment reference: offsets peak a little after 0, a good third in overlap.
    words, pipeline = "Switchboard (word alignments)", "Switchboard (session pipeline)"
    assert 0 < fto.loc[words, "p50 ms"] < 300 and 0 < fto.loc[words, "mode ms"] < 300
    assert 25 < fto.loc[words, "in overlap %"] < 50
    # The session-pipeline one is the packaged table's own distribution.
    packaged = switchboard_reference(file=PIPELINE_REFERENCE_FILE)["floor_transfer_offset"]
    assert fto.loc[pipeline, "floor transfers"] == packaged["n"]
    assert fto.loc[pipeline, "p50 ms"] == round(1000 * packaged["percentiles_s"]["50"])
    assert [c for c in fto.columns if c.startswith("p")] == ["p5 ms", "p10 ms", "p25 ms", "p50 ms", "p75 ms",
                                                             "p90 ms", "p95 ms"]
    figure = view.figures["floor_transfer_offsets"]
    assert figure.data[2].name == "s1 (median 1000 ms, n=4)"
    assert [t.name.rsplit(" (", 1)[0] for t in figure.data] == [words, pipeline, "s1", "s2"]
    # Both grey, told apart: another shade, and the word-alignment one dashed.
    assert figure.data[0].line.dash == "dash" and figure.data[1].line.dash == "solid"
    assert figure.data[0].line.color != figure.data[1].line.color
    bars = {t.name: t for t in view.figures["statistics"].data}
    assert set(bars) == {words, pipeline, "s1", "s2"}
    assert bars[words].marker.pattern.shape == "/" and bars[words].marker.color != bars[pipeline].marker.color
    s1 = figure.data[2]
    assert s1.y[list(s1.x).index(1.025)] == pytest.approx(100.0)  # all of s1 in the 1.00-1.05 s bin
    assert view.headline["s2"]["floor_transfer_offset_median_s"] == pytest.approx(-0.5)


def test_the_statistics_view_says_which_switchboard_reference_is_like_with_like(study):
    engine, root = study
    view = statistics_view(StudyAnalysis(engine, "hand", root))
    words = switchboard_reference()
    pipeline = switchboard_reference(file=PIPELINE_REFERENCE_FILE)
    table = view.tables["statistics"].set_index("measure")
    assert list(table.columns[:2]) == ["Switchboard (word alignments)", "Switchboard (session pipeline)"]
    assert table.loc["gap /min", "Switchboard (word alignments)"] == pytest.approx(words["per_minute"]["gap"])
    assert table.loc["gap /min", "Switchboard (session pipeline)"] == pytest.approx(pipeline["per_minute"]["gap"])
    notes = "\n".join(view.notes)
    assert (f"Switchboard (session pipeline) is the like-with-like comparison: {pipeline['conversations']} "
            "Switchboard conversations") in notes
    onset, offset = round(1000 * BOUNDARY_LAGS.onset_s), round(1000 * BOUNDARY_LAGS.offset_s)
    assert pipeline["measurement"]["boundary_correction"]["method"] == CORRECTION
    assert f"{CORRECTION} (clean speech: onset {onset:+d} ms, offset {offset:+d} ms;" in notes
    assert "how Switchboard is usually reported" in notes and "docs/pipeline-bias.md" in notes
    assert "docs/vad-vs-alignment.md" not in notes
    # These sessions' voice activity is simulated, used as found: the view and the export say so,
    # and that the pipeline reference was measured otherwise.
    assert "Sessions measured with no boundary correction; backchannels from none found: no words." in notes
    assert "not like with like for these sessions" in notes
    sessions = view.tables["session_statistics"]
    assert set(sessions["boundary correction onset ms"]) == {0}
    assert set(sessions["boundary correction offset ms"]) == {0}
    assert set(sessions["backchannels from"]) == {"none found: no words"}


def test_a_refused_reference_is_said_and_the_other_still_shown():

    pipeline = switchboard_reference(file=PIPELINE_REFERENCE_FILE)
    found = References({PIPELINE_REFERENCE: pipeline}, {WORD_REFERENCE: "built with other event parameters"})
    notes = reference_notes(found)
    assert notes[0] == "No Switchboard (word alignments) column: built with other event parameters."
    assert notes[1].startswith("Switchboard (session pipeline) is the like-with-like comparison")
    assert not any("difference" in note for note in notes)
    references = {WORD_REFERENCE: None, PIPELINE_REFERENCE: pipeline}
    table = statistics_table({}, references).set_index("measure")
    assert table[WORD_REFERENCE].isna().all() and table.loc["gap /min", PIPELINE_REFERENCE] == pipeline["per_minute"]["gap"]
    assert floor_transfer_table({}, references)["series"].tolist() == [PIPELINE_REFERENCE]


def test_a_system_that_never_takes_the_floor_has_no_fto_median():
    from analysis import study_figures, study_metrics
    from turntaking.stats import corpus_statistics

    alone = corpus_statistics([conversation_statistics(Conversation(60.0, ([(0.5, 4.5), (6.0, 9.0)], [])))], "alone")
    table = study_metrics.floor_transfer_table({"alone": alone}, None)
    assert table.to_dict("records")[0]["floor transfers"] == 0 and table.loc[0, "p50 ms"] is None
    figure = study_figures.floor_transfer_figure(study_metrics.floor_transfer_histogram({"alone": alone}, None), table)
    assert figure.data[0].name == "alone (no floor transfers)" and max(figure.data[0].y) == 0


def test_overview_counts(study):
    engine, _ = study
    data = load_study(engine, "hand")
    systems = sessions_per_system(data).set_index("system")
    assert systems.loc["s1", ["participants", "sessions", "complete_sessions", "recordings"]].tolist() == [2, 2, 2, 1]
    assert systems.loc["s2", ["participants", "sessions", "complete_sessions", "recordings"]].tolist() == [1, 1, 0, 0]
    assert systems.loc["s1", RECORDED] == "0:00:02"  # not 0.00056 hours
    assert clock_duration(3725.4) == "1:02:05"
    # Formal and artifact-control pairs by number of judgments: p1 3, p2 2, c1 1.
    assert annotation_progress(data).set_index("judgments")[PAIRS_JUDGED].to_dict() == {0: 0, 1: 1, 2: 1, 3: 1}
    # Every pair count named for what it counts
    assert clip_pair_counts(data) == {"formal": 2, "artifact_control": 1, "attention": 1, "practice": 0, "all": 4}
    # Nobody here is demo data: a demo label over this study counts them as real
    real = real_data_counts(data)
    assert real == {"participants": 2, "annotators": 3, "judgments": len(data.judgments)} and len(data.judgments) >= 7
    assert demo_note("DEMO data", real) == (
        f"**DEMO data.** Real data added since: 2 real participants, 3 real annotators, {len(data.judgments)} real "
        "judgments; the views show them together with the demo's.")
    assert demo_note("DEMO data", dict.fromkeys(real, 0)) == "**DEMO data.** No real participants, annotators or judgments yet."
    done = annotator_completion(data).set_index("annotator")
    assert done.loc[X, ["judgments", "formal", "artifact_control", "attention"]].tolist() == [4, 2, 1, 1]
    assert done.loc[Z, "judgments"] == 1


def test_judgments_in_natural_and_perturbed_terms(study):
    engine, _ = study
    j = load_study(engine, "hand").judgments.set_index(["annotator", "pair_id"])
    assert j.loc[(Y, "p1"), ["choice", "rating_natural", "rating_perturbed"]].tolist() == ["perturbed", 2, 3]
    assert j.loc[(Z, "p1"), ["choice", "rating_natural", "rating_perturbed"]].tolist() == ["natural", 5, 1]
    assert j.loc[(X, "c1"), ["trial", "artifact_natural", "artifact_perturbed"]].tolist() == ["artifact_control", 2, 4]
    assert j.loc[(X, "a1"), "attention_passed"] is True or j.loc[(X, "a1"), "attention_passed"] == True  # noqa: E712
    assert j.loc[(Y, "a1"), "attention_passed"] == False  # noqa: E712


def test_annotator_exclusion_and_its_effect(study):
    engine, root = study
    data = load_study(engine, "hand")
    annotators = annotator_table(data).set_index("annotator")
    # Against the others' votes only: on p1 x and z meet a tie (y vs the other), y disagrees with
    # x and z; on p2 (x natural, y perturbed) each disagrees with the other.
    agreement = annotators["agreement_with_others_majority"].to_dict()
    assert (agreement[X], agreement[Y]) == (0.0, 0.0) and math.isnan(agreement[Z])
    assert annotators["compared_with_others"].to_dict() == {X: 1, Y: 2, Z: 0}
    assert annotators["others_tied"].to_dict() == {X: 1, Y: 0, Z: 1}
    assert annotators["attention_failures"].to_dict() == {X: 0, Y: 1, Z: 0}
    assert suggested_exclusions(annotator_table(data)) == [Y]

    everyone = table_two(human_summary(data)).set_index("statistic")["value"]
    assert everyone["natural preference rate"] == pytest.approx(3 / 5)
    assert everyone["formal judgments"] == 5
    assert everyone["artifact difference (perturbed - natural)"] == pytest.approx(2.0)
    effect = exclusion_effect(human_summary(data), human_summary(data, [Y])).set_index("statistic")
    assert effect.loc["natural preference rate"].tolist() == [pytest.approx(0.6), pytest.approx(1.0)]
    assert effect.loc["formal judgments"].tolist() == [5, 3]
    assert everyone["judgments whose others tied"] == 2  # x and z on p1
    assert everyone["agreement with the others' majority (own vote left out)"] == 0.0

    # Without y, early_entry's clips have one rater each: no Krippendorff alpha (not an error).
    kept_types = per_type_table(human_summary(data, [Y])).set_index("type")
    assert kept_types.loc["early_entry", ["alpha_forced_choice", "alpha_rating_difference",
                                          "alpha_pooled_ratings_natural_and_perturbed"]].isna().all()

    view = human_view(StudyAnalysis(engine, "hand", root))  # the suggested exclusion by default
    assert view.headline["excluded_annotators"] == [Y]
    assert view.tables["per_annotator"].set_index("annotator")["suggested_exclusion"].to_dict() == {
        X: False, Y: True, Z: False}


def _scores(nll: float) -> dict:
    return {"mean_nll": nll, "tail_nll": nll, "dialog_nll": nll, "n_units": 3, "naturalness": -nll}


def test_a_score_stored_under_the_old_scorer_name_is_listed_under_the_new_one(study):
    engine, _ = study
    data = load_study(engine, "hand")
    first, second = (int(i) for i in data.sessions["session_id"][:2])
    scores = {first: {**_scores(1.0), "scorer": "turnnat-paper"}, second: {**_scores(2.0), "scorer": "turnnat-va"}}
    table = naturalness_table(data, scores, "turnnat-va").set_index("session_id")
    assert table.loc[[first, second], "scorer"].tolist() == ["turnnat-va", "turnnat-va"]
    assert table.loc[[first, second], "naturalness"].tolist() == [-1.0, -2.0]


def test_switchboard_is_scored_as_the_sessions_were_with_words_or_without(study):
    """The default scorer reads words: sessions with words sit beside Switchboard windows scored
    with theirs, sessions without beside windows scored on voice activity alone."""
    engine, _ = study
    data = load_study(engine, "hand")
    ids = [int(i) for i in data.sessions["session_id"][:2]]
    scorer = load_scorer("timing-hazard-words")
    rows = {}
    for words in (True, False):
        scores = {i: {**_scores(2.0), "scorer": scorer.name, "duration_s": 90.0, "word_cues": 12 if words else None}
                  for i in ids}
        table = naturalness_table(data, scores, scorer.name)
        assert table["with_words"].tolist() == [words, words]
        rows[words] = naturalness_reference_row(table, scorer)
    assert rows[True]["system"] == "Switchboard human-human (90 s windows, with words)"
    assert rows[False]["system"] == "Switchboard human-human (90 s windows)"
    assert rows[True]["mean_naturalness"] == scorer.reference["90"]["mean"]
    assert rows[False]["mean_naturalness"] == load_scorer("timing-hazard").reference["90"]["mean"]
    assert rows[True]["mean_naturalness"] > rows[False]["mean_naturalness"]


def test_scorer_against_people_and_the_benchmark_table(study):
    engine, _ = study
    data = load_study(engine, "hand")
    pairs = data.pairs.set_index("pair_id")
    scores = {
        int(pairs.loc["p1", "natural_clip_id"]): _scores(1.0), int(pairs.loc["p1", "perturbed_clip_id"]): _scores(1.5),
        int(pairs.loc["p2", "natural_clip_id"]): _scores(2.0), int(pairs.loc["p2", "perturbed_clip_id"]): _scores(1.8),
    }
    prefs = pair_preferences(data, scores).set_index("pair_id")
    assert prefs.loc["p1", ["natural_votes", "majority", "scorer_prefers", "agrees_with_people"]].tolist() == [
        2, "natural", "natural", True]
    assert prefs.loc["p1", "score_difference"] == pytest.approx(0.5)
    assert prefs.loc["p2", "majority"] == "tie" and prefs.loc["p2", "agrees_with_people"] is None
    agreement = metric_people_agreement(prefs.reset_index())
    assert (agreement["pairs"], agreement["agree"], agreement["rate"]) == (1, 1, 1.0)
    # One pair from one conversation: no interval (the old Wilson interval of 1/1 said [0.21, 1]).
    assert agreement["ci_low"] is None and agreement["agreement_interval"] == "n/a: 1 source conversation"

    clips = clip_ratings(data, scores).set_index(["pair_id", "side"])
    # p1's natural clip: ratings 4, 2, 5 -> 11/3; its perturbed clip 2, 3, 1 -> 2.
    assert clips.loc[("p1", "natural"), "mean_rating"] == pytest.approx(11 / 3)
    assert clips.loc[("p1", "perturbed"), "mean_rating"] == pytest.approx(2.0)
    assert clips.loc[("p1", "natural"), "naturalness"] == -1.0

    table, _ = benchmark_validation(data, scores)
    overall = table.set_index("type").loc["all"]
    # Score differences 0.5 and -0.2: mean 0.15; one of two pairs right; C-index 2 of 4. Both pairs come
    # from one conversation: no interval (not one over 2 pairs), and the table says why.
    assert overall["mean_score_difference"] == pytest.approx(0.15)
    assert overall["pair_accuracy"] == 0.5 and overall["c_index"] == 0.5
    assert data.pairs.set_index("pair_id").loc[["p1", "p2"], "source"].tolist() == ["sw-1", "sw-1"]
    assert (overall["sources"], overall["interval"]) == (1, "n/a: 1 source conversation")
    assert overall[["difference_ci_low", "accuracy_ci_low", "c_index_ci_high"]].isna().all()
    assert table["type"].tolist() == ["all", "early_entry", "late_response"]


def test_rating_correlation_on_a_worked_example():
    clips = pd.DataFrame({"pair_id": ["a", "a", "b", "b"], "naturalness": [1.0, 2.0, 3.0, 4.0],
                          "mean_rating": [1.0, 3.0, 2.0, 4.0]})
    # Deviations (-1.5, -0.5, 0.5, 1.5) and (-1.5, 0.5, -0.5, 1.5): r = 4 / 5; the ranks are the values.
    result = rating_correlation(clips)
    assert (result["clips"], result["pairs"], result["interval"]) == (4, 2, "95 % CI over 2 pairs")
    assert result["pearson_r"] == pytest.approx(0.8)
    assert result["spearman_rho"] == pytest.approx(0.8)
    # Pairs are drawn whole: a resample is a twice, b twice (r = 1 each: two points) or both (0.8).
    assert (result["pearson_ci_low"], result["pearson_ci_high"]) == (pytest.approx(0.8), pytest.approx(1.0))
    assert "pearson_p" not in result  # a p-value over clips counted each pair twice
    assert rating_correlation(clips.iloc[:2])["pearson_r"] is None  # too few clips


def test_rating_correlation_interval_is_over_pairs():
    # 30 pairs: a pair's two clips share its conversation's level in both the scorer and the
    # ratings; within a pair the perturbed clip is lower in both.
    rng = np.random.default_rng(3)
    level = rng.normal(0, 1, 30)
    rows = [{"pair_id": f"p{i}", "side": side, "naturalness": level[i] - drop + rng.normal(0, 0.5),
             "mean_rating": 3 + level[i] - drop + rng.normal(0, 0.8)}
            for i in range(30) for side, drop in (("natural", 0.0), ("perturbed", 1.0))]
    result = rating_correlation(pd.DataFrame(rows))
    assert result["interval"] == "95 % CI over 30 pairs"
    for name, value in (("pearson", result["pearson_r"]), ("spearman", result["spearman_rho"])):
        low, high = result[f"{name}_ci_low"], result[f"{name}_ci_high"]
        assert -1 <= low < value < high <= 1 and value > 0.5


def _rows(engine, kind: str) -> list:
    with Session(engine) as s:
        return s.exec(select(AnalysisResult.subject, AnalysisResult.updated_at).where(AnalysisResult.kind == kind)
                      .order_by(AnalysisResult.subject)).all()


def test_per_session_results_are_cached_and_follow_the_voice_activity(tmp_path, study):
    engine, root = study
    statistics_view(StudyAnalysis(engine, "hand", root))
    first = _rows(engine, "stats")
    assert len(first) == 3
    statistics_view(StudyAnalysis(engine, "hand", root))
    assert _rows(engine, "stats") == first  # read from the cache, not written again

    # New voice activity for session B (two gaps now): its statistics are computed again.
    session_b = int(load_study(engine, "hand").sessions["session_id"].iloc[1])
    with session_scope(engine) as s:
        st = get_or_create_study(s, "hand")
        save_analysis_result(s, "voice-activity", f"session:{session_b}", {},
                             va([[(0.5, 4.5), (10.5, 14.5)], [(5.5, 9.5)]]), st)
    table = statistics_view(StudyAnalysis(engine, "hand", root)).tables["session_statistics"]
    assert table["gap /min"].tolist() == [3.0, 2.0, 0.0]
    with Session(engine) as s:
        assert s.exec(select(func.count()).select_from(AnalysisResult).where(
            AnalysisResult.kind == "stats", AnalysisResult.subject == f"session:{session_b}")).one() == 2
    # Put session B back for the other tests.
    with session_scope(engine) as s:
        save_analysis_result(s, "voice-activity", f"session:{session_b}", {}, va(SESSION_B), get_or_create_study(s, "hand"))


def test_judge_tables_are_consistent_and_cached_per_checkpoint(study, checkpoint):
    engine, root = study
    view = judge_view(StudyAnalysis(engine, "hand", root, checkpoint))
    agreement, decisions, confusion = (view.tables[k] for k in ("agreement", "decisions", "confusion"))
    assert {"s1", "s2"} <= set(agreement["series"])
    # Table 2's percentage is the positive decision's share of the metric's instances.
    s1 = agreement[(agreement["series"] == "s1") & (agreement["metric"] == "speak_up")].set_index("decision")
    total = s1["instances"].sum()
    row = decisions.set_index("series").loc["s1"]
    assert row["speak_up: instances"] == total
    if total:
        assert row["speak_up: speaks up %"] == pytest.approx(100 * s1.loc["speaks up", "instances"] / total)
    assert set(view.tables["user_interruptions"]["system"]) == {"s1", "s2"}
    # Intervals are over sessions: s2 has one, so none (said so); s1's lie in [0, 100] and say
    # over how many sessions that had the decision.
    s2 = agreement[(agreement["series"] == "s2") & (agreement["instances"] > 0)]
    assert set(s2["interval"]) == {"n/a: 1 session"} and s2["ci_low_percent"].isna().all()
    both = agreement[(agreement["series"] == "s1") & (agreement["sessions"] == 2)]
    assert len(both) and set(both["interval"]) == {"95 % CI over 2 sessions"}
    for r in both.itertuples():
        assert 0 <= r.ci_low_percent <= r.agreement_percent <= r.ci_high_percent <= 100
    # The figure draws those intervals, none for s2, and its hover names the unit.
    for bar in view.figures["agreement"].data:
        if bar.name == "s2":
            assert all(math.isnan(v) for v in bar.error_y.array)
        assert "%{customdata[1]}" in bar.hovertemplate
    assert any(bar.name == "s1" and not all(math.isnan(v) for v in bar.error_y.array)
               for bar in view.figures["agreement"].data)
    # Each system's confusion matrix covers all its decisions: 100 %.
    for _, part in confusion.groupby("system"):
        assert part["percent"].sum() == pytest.approx(100.0, abs=0.01)
    assert len(_rows(engine, "judge-metrics")) == 3
    judge_view(StudyAnalysis(engine, "hand", root, checkpoint))
    assert len(_rows(engine, "judge-metrics")) == 3


def test_session_view_pieces():
    times, lows, highs = waveform_envelope(np.array([[0.0, 1, -1, 2, 0, 0, 3, -3]]), 4, bins=2)
    assert times.tolist() == [0.5, 1.5]
    assert lows.tolist() == [[-1, -3]] and highs.tolist() == [[2, 3]]

    instances = {"speak_up": Instances(np.array([10, 20]), np.array([True, False]), np.array([0.3, 0.2]))}
    table = decisions_table(instances, JudgeThresholds())  # speak_up: judge T iff p(T) - p(C) > 0.0
    assert table["time"].tolist() == [pytest.approx(0.4), pytest.approx(0.8)]
    assert table["decision"].tolist() == ["speaks up", "lets continue"]
    assert table["judge"].tolist() == ["speaks up", "speaks up"]
    assert table["agrees"].tolist() == [True, False]


def test_session_view_of_a_recorded_session(study, checkpoint):
    engine, root = study
    analysis = StudyAnalysis(engine, "hand", root, checkpoint)
    session_a = int(analysis.data.sessions["session_id"].iloc[0])
    view, audio = session_view(analysis, session_a)
    samples, rate = audio
    assert samples.shape == (2, 32000) and rate == 16000
    events = view.tables["events"]
    assert events[events["event"] == "gap"][["start", "end"]].values.tolist() == [[4.5, 5.5], [9.5, 10.5], [14.5, 15.5]]
    # the channels by who speaks on them (the system on channel 1 here), not A / B
    names = {trace.name for trace in view.figures["timeline"].data}
    assert {"participant waveform", "system waveform", "participant voice activity", "system voice activity",
            "gap"} <= names
    assert not {name for name in names if name.startswith(("A ", "B "))}
    assert set(events["speaker"]) <= {"participant", "system"} and len(events)


def test_cached_judge_results_summarize_exactly_like_the_instances(study, checkpoint):
    from judge.model import predict

    engine, _ = study
    judge = load_study_judge(checkpoint)
    data = load_study(engine, "hand")
    convs = session_conversations(engine, data, list(data.sessions["session_id"]))
    direct = [conversation_instances(c, predict(judge.model, c), (1,), judge.thresholds.operating_points)[0]
              for c in convs.values()]
    stored = [instances_from_json(_judge_one(judge, c)["instances"], judge.thresholds) for c in convs.values()]
    assert summarize(stored, judge.thresholds.metrics) == summarize(direct, judge.thresholds.metrics)


def test_user_interruptions_and_their_floor_taking_share():
    # The user (channel 0) starts inside the system's speech twice: at 3 s, and keeps talking after
    # the system stops (takes the floor); at 11 s, briefly, while the system goes on (butts in).
    conv = Conversation(20.0, ([(3.0, 8.0), (11.0, 12.0)], [(1.0, 6.0), (9.0, 14.0)]))
    sessions = pd.DataFrame({"session_id": [1], "system": ["s"], "system_channel": [1]})
    data = StudyData("x", "x", {}, 1, pd.DataFrame(), sessions, pd.DataFrame(), pd.DataFrame(), pd.DataFrame())
    table = user_interruption_table(data, {1: conversation_statistics(conv)})
    assert table.to_dict("records") == [{"system": "s", "user_interruptions": 2, "floor_taking_percent": 50.0}]


def test_judge_view_puts_the_human_reference_first(tmp_path, study, checkpoint):
    from tests.scripted import write_ms98

    engine, root = study
    for conv_id in ("4321", "4322", "4323"):  # the scripted conversation three times, in Switchboard's layout
        write_ms98(tmp_path, conv_id)
    (tmp_path / "splits").mkdir()
    (tmp_path / "splits" / "val.txt").write_text("sw4321\nsw4322\nsw4323\n")
    stored = store_judge_reference(engine, load_study_judge(checkpoint), tmp_path, conversations=3)
    # 4323 is in the tuning half (judge.thresholds.validation_half): the reference leaves it out.
    assert stored["out_of_sample"]["conversation_ids"] == ["4321", "4322"]

    view = judge_view(StudyAnalysis(engine, "hand", root, checkpoint))
    agreement = view.tables["agreement"]
    assert agreement["series"].iloc[0] == "human reference"
    reference = agreement[(agreement["series"] == "human reference") & (agreement["metric"] == "speak_up")]
    # Each speaker of each scripted conversation in the system role: 4 times it speaks up, 6 not.
    assert reference.set_index("decision")["instances"].to_dict() == {"speaks up": 4, "lets continue": 6}
    assert set(reference["interval"]) == {"95 % CI over 2 conversations"}
    assert view.tables["decisions"]["series"].tolist() == ["human reference", "s1", "s2"]
    assert not any("No human reference" in note for note in view.notes)
    assert any("2 Switchboard validation conversations of the reference half" in note for note in view.notes)


def test_a_study_finds_its_events_with_its_own_event_parameters(tmp_path):
    # One session: speaker 0 pauses 0.5 s inside its turn. With the study's `events:`
    # (ipu_silence_s 1.0) the pause is bridged, and the Switchboard reference (built with 0.2 s)
    # is left out rather than compared with numbers found another way.
    engine = db.make_engine(f"sqlite:///{tmp_path / 'events.db'}")
    db.init_db(engine)
    activity = [[(1.0, 2.0), (2.5, 3.5)], [(5.0, 6.0)]]
    with session_scope(engine) as s:
        for name, events in (("default", None), ("bridged", {"ipu_silence_s": 1.0})):
            st = get_or_create_study(s, name, config={"events": events} if events else {})
            system = get_or_create_system(s, st, "s1", "cascaded")
            conv = start_session(s, get_or_create_participant(s, st, external_id="p"), system, "a topic")
            end_session(s, conv, "complete")
            save_analysis_result(s, "voice-activity", f"session:{conv.id}", {}, va(activity), st)
    default = statistics_view(StudyAnalysis(engine, "default", tmp_path))
    bridged = statistics_view(StudyAnalysis(engine, "bridged", tmp_path))
    assert default.tables["statistics"].set_index("measure").loc["pause /min", "s1"] == pytest.approx(1.0)
    assert bridged.tables["statistics"].set_index("measure").loc["pause /min", "s1"] == 0
    for reference in ("Switchboard (word alignments)", "Switchboard (session pipeline)"):
        assert default.tables["statistics"][reference].notna().any()
        assert bridged.tables["statistics"][reference].isna().all()
        assert any(f"No {reference} column" in note and "'ipu_silence_s': 0.2" in note for note in bridged.notes)
    assert set(bridged.tables["floor_transfer_offsets"]["series"]) == {"s1"}

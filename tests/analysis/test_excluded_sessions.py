"""Sessions that are no conversation are left out by one rule, everywhere. A study
of real recordings (espeak-ng speech, a tone, digital silence), each call ended through
`finish_session` as a browser call is: two normal calls, a call the system never answered, a call
where the participant's microphone played only a tone, and an unanswered call stored before the
check existed (its verdict NULL, decided by the analysis from its voice activity). The statistics,
the judge metrics and every naturalness scorer count the same two sessions; the overview, the
notes, the session view, the report and the dataset export name the others with their reason, and
the silent system is reported as such.
"""

from __future__ import annotations

import json

import datasets
import numpy as np
import pandas as pd
import pytest
import soundfile
import sqlalchemy as sa
from sqlmodel import select

from analysis.dataset import export_dataset
from analysis.report import write_report
from analysis.views import StudyAnalysis, naturalness_view, session_view, statistics_view, study_view
from storage import db
from storage.db import session_scope
from storage.models import ConversationSession
from storage.records import get_or_create_participant, get_system, start_session
from studies.call_quality import NETWORK_TOO_POOR, NO_PARTICIPANT_SPEECH, NO_SYSTEM_ANSWER, SERVER_BEHIND
from studies.config import apply_config, parse_config
from studies.sessions import call_relpath, finish_session, network_relpath
from tests.studies.test_call_quality import network_rows
from tests.rendered_speech import SAMPLE_RATE, alternating_dialogue

TEXTS = ("hello there I would like to talk about hiking", "sure what would you like to know about it",
         "what should I bring for a day hike", "water food a map and good shoes", "thank you that helps a lot")


SERVER_REASON = (f"{SERVER_BEHIND}: system audio sent late (189 blocks over the study's limit 25); in its slowest "
                 "seconds (p90) its event loop 240 ms late, its thread waiting for a CPU 60 % of the time")


def tone(n: int) -> np.ndarray:
    return (0.3 * np.sin(2 * np.pi * 440 * np.arange(n) / SAMPLE_RATE)).astype(np.float32)


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """(engine, data root, {name: session id}) of the study "calls", its cache filled."""
    root = tmp_path_factory.mktemp("calls")
    engine = db.make_engine(f"sqlite:///{root / 'calls.db'}")
    db.init_db(engine)
    talk = alternating_dialogue(TEXTS).samples  # channel 0 the participant, 1 the system
    unanswered = np.stack([talk[0], np.zeros_like(talk[1])])
    calls = {"normal cascaded": ("cascaded", talk), "normal baseline": ("baseline", talk),
             "unanswered": ("cascaded", unanswered), "tone": ("baseline", np.stack([tone(talk.shape[1]), talk[1]])),
             "unanswered before the check": ("cascaded", unanswered),
             # conversations that took place, their timing spoilt: by this server, by the network
             "degraded by the server": ("baseline", talk), "lossy network": ("baseline", talk)}
    networks = {"degraded by the server": network_rows(late_blocks=189, loop_lag_ms=240.0, cpu_wait=0.6),
                "lossy network": network_rows(loss_to_server=0.2)}
    with session_scope(engine) as s:
        st = apply_config(s, parse_config({"name": "calls", "min_call_seconds": 5, "systems": [
            {"name": "cascaded", "kind": "cascaded"}, {"name": "baseline", "kind": "cascade-backchannel"}]}))
        ids = {}
        for k, (name, (system, _)) in enumerate(calls.items()):
            participant = get_or_create_participant(s, st, external_id=f"p{k}")
            ids[name] = start_session(s, participant, get_system(s, st, system), "hiking").id
    for name, (_, channels) in calls.items():
        wav = root / call_relpath(ids[name])
        wav.parent.mkdir(parents=True)
        soundfile.write(str(wav), channels.T, SAMPLE_RATE, subtype="PCM_16")
        if name in networks:
            (root / network_relpath(ids[name])).write_text("".join(json.dumps(r) + "\n" for r in networks[name]))
        finish_session(engine, ids[name], "complete", root)
    with session_scope(engine) as s:  # as a row from before migration 0009: not checked
        s.execute(sa.update(ConversationSession).where(ConversationSession.id == ids["unanswered before the check"])
                  .values(analysable=None, quality_reason=None))
    StudyAnalysis(engine, "calls", root).fill()  # what the background worker does
    yield engine, root, ids
    engine.dispose()


def verdicts(engine) -> dict[int, tuple]:
    with session_scope(engine) as s:
        return {r.id: (r.analysable, r.quality_reason) for r in s.exec(select(ConversationSession))}


def test_the_verdicts_at_the_call_end_and_from_the_background(study):
    engine, _, ids = study
    assert verdicts(engine) == {
        ids["normal cascaded"]: (True, None), ids["normal baseline"]: (True, None),
        ids["unanswered"]: (False, NO_SYSTEM_ANSWER), ids["tone"]: (False, NO_PARTICIPANT_SPEECH),
        ids["unanswered before the check"]: (False, NO_SYSTEM_ANSWER),  # decided by the fill, stored
        # the server's lateness is the server's, with its own figures, not the participant's network
        ids["degraded by the server"]: (False, SERVER_REASON),
        ids["lossy network"]: (False, f"{NETWORK_TOO_POOR}: loss of the participant's audio (0.2 over the study's "
                                      "limit 0.05)"),
    }


def test_every_statistic_and_every_scorer_counts_the_same_sessions(study):
    engine, root, ids = study
    analysis = StudyAnalysis(engine, "calls", root, compute=False)  # as the web views read the cache
    normal = {ids["normal cascaded"], ids["normal baseline"]}
    assert set(analysis.activity) == normal
    assert set(analysis.statistics) == normal
    assert set(analysis.judge_results) == normal
    assert len(analysis.scorers) == 4  # timing-hazard, timing-hazard-words, durations, turnnat-va
    for name in analysis.scorers:
        assert {i for i, s in analysis.naturalness(name)[0].items() if "naturalness" in s} == normal, name
    assert analysis.pending == {}
    assert set(statistics_view(analysis).tables["session_statistics"]["session_id"]) == normal
    by_scorer = naturalness_view(analysis).tables["naturalness_by_scorer"]
    assert sorted(by_scorer["scorer"]) == sorted(list(analysis.scorers) * 2)
    assert (by_scorer["sessions"] == 1).all()  # one analysable session per system, under every scorer


def test_the_overview_lists_them_with_their_reason_and_reports_the_silent_system(study):
    engine, root, ids = study
    analysis = StudyAnalysis(engine, "calls", root, compute=False)
    view = study_view(analysis, "overview")
    excluded = view.tables["excluded_sessions"].set_index("session_id")["reason"].to_dict()
    assert {i: r for i, r in excluded.items() if not r.startswith((SERVER_BEHIND, NETWORK_TOO_POOR))} == {
        ids["unanswered"]: NO_SYSTEM_ANSWER, ids["tone"]: NO_PARTICIPANT_SPEECH,
        ids["unanswered before the check"]: NO_SYSTEM_ANSWER}
    assert set(excluded) >= {ids["degraded by the server"], ids["lossy network"]}
    # the server's failings counted apart: the platform's fault, not the participants'
    assert view.headline["calls_degraded_by_this_server"] == 1
    assert "**Calls degraded by this server: 1.**" in "\n".join(view.notes)
    systems = view.tables["systems"].set_index("system")
    assert systems.loc["cascaded", ["sessions", "analysable_sessions", "not_analysable"]].tolist() == [3, 1, 2]
    notes = "\n".join(view.notes)
    assert "cascaded: 2 of 3 calls with no answer from the system" in notes
    assert "baseline:" not in notes.split("never answered")[1].split(")")[0]  # the tone call is not its fault
    assert view.headline["unanswered_calls"] == {"cascaded": {"no_answer": 2, "calls": 3}}
    assert view.headline["analysable_sessions"] == 2
    for key in ("statistics", "judge", "naturalness"):
        assert "Left out: 5 session(s) that are not analysable" in "\n".join(study_view(analysis, key).notes), key


def test_the_session_view_of_an_excluded_session_says_why(study):
    engine, root, ids = study
    analysis = StudyAnalysis(engine, "calls", root, compute=False)
    view, audio = session_view(analysis, ids["unanswered"])
    assert view.notes[0].startswith("**Not analysable: no answer from the system.**")
    assert not view.figures and audio is not None  # a message, not an empty panel; the call still plays
    view, _ = session_view(analysis, ids["tone"])
    assert "Not analysable: no speech from the participant" in view.notes[0]
    normal, _ = session_view(analysis, ids["normal cascaded"])
    assert "timeline" in normal.figures
    # a conversation spoilt by the server or the network: marked, and shown in full (timeline, both
    # sides' words, the audio), its voice activity computed though it is counted nowhere
    for name, reason in (("degraded by the server", SERVER_BEHIND), ("lossy network", NETWORK_TOO_POOR)):
        view, audio = session_view(analysis, ids[name])
        assert view.notes[0].startswith(f"**Not analysable: {reason}"), view.notes
        assert "timeline" in view.figures and "network" in view.tables and audio is not None
        speakers = set(view.tables["transcript"]["speaker"])
        assert {"participant", "system"} <= speakers, view.tables["transcript"]


def test_the_report_and_the_export_list_them(study, tmp_path):
    engine, root, ids = study
    analysis = StudyAnalysis(engine, "calls", root)
    page = write_report(analysis, tmp_path / "report").read_text()
    assert "cascaded: 2 of 3 calls with no answer from the system" in page
    assert "<h3>excluded_sessions</h3>" in page
    # its per-session views show the first analysable session of each system
    assert f"Session {ids['normal cascaded']}" in page and f"Session {ids['normal baseline']}" in page
    # every session with a recording has its view, a left-out one marked with its reason
    assert f"<h2>Session {ids['unanswered']}" in page and f"<h2>Session {ids['degraded by the server']}" in page
    assert "Not analysable: degraded by this server" in page
    assert "7 of 7 sessions shown one by one below: every session with a recording; 5 of them are left out" in page
    table = pd.read_csv(tmp_path / "report" / "tables" / "overview__excluded_sessions.csv")
    assert set(table["session_id"]) == {ids[n] for n in ("unanswered", "tone", "unanswered before the check",
                                                          "degraded by the server", "lossy network")}
    headline = json.loads((tmp_path / "report" / "headline.json").read_text())
    assert {e["session_id"] for e in headline["overview"]["excluded_sessions"]} == set(table["session_id"])
    stats = pd.read_csv(tmp_path / "report" / "tables" / "statistics__session_statistics.csv")
    assert set(stats["session_id"]) == {ids["normal cascaded"], ids["normal baseline"]}

    export_dataset(analysis, tmp_path / "ds")
    exported = datasets.load_from_disk(str(tmp_path / "ds"))
    assert len(exported["pairs"]) == 0 and len(exported["judgments"]) == 0  # a study without pairs exports too
    sessions = exported["sessions"].to_pandas().set_index("session_id")
    assert sessions.loc[ids["tone"], "quality_reason"] == NO_PARTICIPANT_SPEECH
    assert not sessions.loc[ids["unanswered"], "analysable"]
    assert sessions.loc[ids["normal baseline"], "analysable"]
    assert pd.isna(sessions.loc[ids["normal baseline"], "quality_reason"])

"""Each call's network figures reach the researcher: a study of real recordings (espeak-ng
speech), each call ended through `finish_session` as a browser call is, one with a network
within the study's limits, one whose participant's audio lost 12 % of its packets and one that
measured none (a scripted call). The session view shows each measured call's figures as a table
and its round trip and loss over the call as a figure (the lossy call too, which is not
analysable, and says why), and so does the dashboard's Session tab; the dataset export has the
figures as columns of every session.
"""

from __future__ import annotations

import json

import datasets
import pytest
import soundfile

from analysis.dataset import export_dataset
from analysis.views import StudyAnalysis, session_view
from storage import db
from storage.db import session_scope
from storage.records import get_or_create_participant, get_system, start_session
from studies.config import apply_config, parse_config
from studies.sessions import call_relpath, finish_session, network_relpath
from tests.rendered_speech import SAMPLE_RATE, alternating_dialogue
from tests.studies.test_call_quality import network_rows

TEXTS = ("hello there I would like to talk about hiking", "sure what would you like to know about it",
         "what should I bring for a day hike", "water food a map and good shoes")
LOSSY_REASON = "network too poor to analyse: loss of the participant's audio (0.12 over the study's limit 0.05)"


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """(engine, data root, {case: session id})."""
    root = tmp_path_factory.mktemp("networked")
    engine = db.make_engine(f"sqlite:///{root / 'calls.db'}")
    db.init_db(engine)
    talk = alternating_dialogue(TEXTS).samples
    networks = {"good": network_rows(loss_to_server=0.02), "lossy": network_rows(loss_to_server=0.12), "scripted": None}
    with session_scope(engine) as s:
        st = apply_config(s, parse_config({"name": "networked", "min_call_seconds": 5,
                                           "systems": [{"name": "cascaded", "kind": "cascaded"}]}))
        ids = {case: start_session(s, get_or_create_participant(s, st, external_id=case),
                                   get_system(s, st, "cascaded"), "hiking").id for case in networks}
    for case, rows in networks.items():
        wav = root / call_relpath(ids[case])
        wav.parent.mkdir(parents=True)
        soundfile.write(str(wav), talk.T, SAMPLE_RATE, subtype="PCM_16")
        if rows is not None:
            (root / network_relpath(ids[case])).write_text("".join(json.dumps(r) + "\n" for r in rows))
        finish_session(engine, ids[case], "complete", root)
    yield engine, root, ids
    engine.dispose()


def test_the_session_view_shows_the_calls_network(study):
    engine, root, ids = study
    analysis = StudyAnalysis(engine, "networked", root, compute=False)
    view, _ = session_view(analysis, ids["good"])
    table = view.tables["network"].set_index("figure")["value"]
    assert (table["loss_to_server"], table["rtt_ms_p50"], table["candidate_type"], table["relay_protocol"]) == \
        ("0.02", "81.0", "host", "–")
    figure = view.figures["network"]
    traces = {trace.name: trace for trace in figure.data}
    assert list(traces["page"].y) == [80.0 + s % 3 for s in range(1, 11)]  # the round trip, second by second
    assert list(traces["page"].x) == [s + 0.2 for s in range(1, 11)]  # on the recording's (microphone) clock
    assert max(traces["participant's audio (server)"].y) == pytest.approx(0.02, abs=0.01)
    # The lossy call is left out, says why, and still shows its network.
    lossy, _ = session_view(analysis, ids["lossy"])
    assert f"**Not analysable: {LOSSY_REASON}.**" in lossy.notes[0]
    assert lossy.tables["network"].set_index("figure")["value"]["loss_to_server"] == "0.12"
    assert "network" in lossy.figures
    scripted, _ = session_view(analysis, ids["scripted"])
    assert "network" not in scripted.tables and "network" not in scripted.figures


def test_the_dataset_export_has_each_sessions_network(study, tmp_path):
    engine, root, ids = study
    out = export_dataset(StudyAnalysis(engine, "networked", root, compute=False), tmp_path / "dataset")
    sessions = datasets.load_from_disk(str(out))["sessions"].to_pandas().set_index("session_id")
    assert sessions.loc[ids["good"], "network_loss_to_server"] == pytest.approx(0.02)
    assert sessions.loc[ids["lossy"], "network_loss_to_server"] == pytest.approx(0.12)
    assert sessions.loc[ids["lossy"], "quality_reason"] == LOSSY_REASON
    assert sessions.loc[ids["good"], "network_candidate_type"] == "host"
    assert sessions.loc[ids["good"], "network_rtt_ms_p50"] == pytest.approx(81.0)
    assert sessions.loc[ids["good"], "network_server_samples"] == 10
    assert sessions.loc[ids["scripted"], ["network_rtt_ms_p50", "network_candidate_type"]].isna().all()


def test_the_dashboards_session_tab_shows_the_network(study):
    from analysis.dashboard import Researcher

    engine, root, ids = study
    researcher = Researcher(engine, root)
    # as the app's views read (background=True) the cache, without loading the judge meanwhile
    researcher.analysis = lambda name: StudyAnalysis(engine, name, root, compute=False)
    notes, _, _, _, _, table, plot, _, _ = researcher.show_session("networked", ids["lossy"])
    assert LOSSY_REASON in notes
    assert table.visible and table.value["headers"] == ["figure", "value", "meaning"]
    assert ["loss_to_server", "0.12", "lost fraction of the participant's audio packets"] in table.value["data"]
    assert plot.visible and plot.value is not None
    *_, table, plot, _, _ = researcher.show_session("networked", ids["scripted"])
    assert not table.visible and not plot.visible

"""The researcher view "Automatic benchmark": each study system's stored examiner row, the one of
its own kind and config, next to FDB's published rows."""

from __future__ import annotations

import pytest

from analysis.views import LAYOUT, StudyAnalysis, study_view
from storage.db import session_scope
from storage.records import get_or_create_study, get_or_create_system, save_examiner_run


def test_each_system_shows_its_own_examiner_row(engine, tmp_path):
    with session_scope(engine) as session:
        study = get_or_create_study(session, "bench")
        get_or_create_system(session, study, "plain cascade", "cascaded")
        get_or_create_system(session, study, "yielding cascade", "cascaded", {"barge_in": "yield"})
        get_or_create_system(session, study, "baseline", "full-duplex-baseline")
        get_or_create_system(session, study, "demo baseline", "full-duplex")  # the kind's alias in the demo
        summary = {"smooth_tor": 0.5, "smooth_latency_s": 1.2, "smooth_tor_ci95": [0.0, 1.0], "pause_tor": 0.0}
        save_examiner_run(session, "cascaded", "cascaded", {}, {"seed": 0}, 14, summary, {}, "runs/cascaded")
        save_examiner_run(session, 'cascaded {"barge_in": "yield"}', "cascaded", {"barge_in": "yield"}, {"seed": 3},
                          14, {"smooth_tor": 1.0, "barge_in_stopped": 1.0}, {}, "runs/yield")
    view = study_view(StudyAnalysis(engine, "bench", tmp_path, compute=False), "examiner")
    assert view.title == LAYOUT["examiner"][0] == "Automatic benchmark"
    table = view.tables["examiner"].set_index("system")
    assert table.loc["plain cascade", "smooth_tor"] == 0.5 and table.loc["plain cascade", "smooth_latency_s"] == 1.2
    assert table.loc["plain cascade", "smooth_tor_ci95"] == "0.000-1.000"
    assert table.loc["yielding cascade", "smooth_tor"] == 1.0 and table.loc["yielding cascade", "task_set_seed"] == 3
    assert table.loc["baseline"].isna()["smooth_tor"] and table.loc["demo baseline"].isna()["smooth_tor"]
    assert table.loc["demo baseline", "examined_as"] == "full-duplex-baseline"
    assert view.headline == {"systems_examined": 2, "systems": 4}
    assert any("Not examined yet: full-duplex-baseline" in note for note in view.notes)
    assert any("no offline equal" in note for note in view.notes)
    published = view.tables["published"].set_index("system")
    assert published.loc["Moshi (FDB v1.0, published)", "smooth_latency_s"] == pytest.approx(0.265)

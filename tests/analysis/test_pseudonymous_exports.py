"""Who the researcher's outputs name: a study of five participants with real recorded calls, two
annotators and a Prolific ID that never connected, all with known Prolific IDs
(tests/analysis/people_study.py), SQLite then PostgreSQL.

- Every view (each tab's notes, tables, figures and headline, the session picker and each
  session's view), the report, the dataset export (the team's own and a public one), the
  questionnaire answers and the annotators' judgments (CSV, Parquet) name participants by pseudonym
  and annotators as annotator-N: no Prolific ID in any of their bytes.
- The payments table, asked for explicitly, is the one place the Prolific IDs are, each beside its
  pseudonym, completion code, status and time taken.
"""

from __future__ import annotations

import io
import json

import pandas as pd
import pytest

from analysis.views import VIEWS, StudyAnalysis, session_choices, session_view, study_view
from storage import audit_trail
from tests.analysis.people_study import (
    ANNOTATORS,
    CALL_S,
    NEVER_CONNECTED,
    PROLIFIC,
    STUDY,
    bytes_under,
    people_study,
)
from tests.command_line import run_cli

IDENTIFIERS = (*PROLIFIC, *ANNOTATORS, NEVER_CONNECTED)


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def people(request, tmp_path_factory):
    yield from people_study(request, tmp_path_factory)


@pytest.fixture(scope="module")
def shown(people, tmp_path_factory) -> dict[str, bytes]:
    """{what: its bytes} of every output a researcher sees or exports, the commands run as typed."""
    out = tmp_path_factory.mktemp("shown")
    where = ("--database-url", people.url, "--data-root", people.root)
    for command in (("analysis", "report", "--study", STUDY, "--out", out / "report"),
                    ("analysis", "export-dataset", "--study", STUDY, "--out", out / "dataset"),
                    ("analysis", "export-dataset", "--study", STUDY, "--out", out / "public",
                     "--share-level", "public"),
                    ("annotation", "export", "--study", STUDY, "--out", out / "judgments.csv"),
                    ("annotation", "export", "--study", STUDY, "--out", out / "judgments.parquet")):
        done = run_cli(*command, *where)
        assert done.returncode == 0, done.stderr
    exported = [e.action for e in audit_trail.events(people.engine) if e.object == STUDY]
    assert exported[:3] == ["exported_dataset", "exported_dataset", "exported_report"]  # newest first
    analysis = StudyAnalysis(people.engine, STUDY, people.root)
    views = [study_view(analysis, key) for key in VIEWS]
    views += [session_view(analysis, session_id)[0] for session_id in people.sessions]
    return {"report": bytes_under(out / "report"), "dataset": bytes_under(out / "dataset"),
            "public dataset": bytes_under(out / "public"),
            "judgments.csv": (out / "judgments.csv").read_bytes(),
            "judgments.parquet": (out / "judgments.parquet").read_bytes(),
            "questionnaire answers": analysis.questionnaire_answers.rows.to_csv().encode(),
            "session picker": json.dumps(session_choices(analysis)).encode(),
            **{f"view {view.key} {view.title}": _view_bytes(view) for view in views}}


def _view_bytes(view) -> bytes:
    return "\n".join([*view.notes, json.dumps(view.headline, default=str),
                      *(table.to_csv() for table in view.tables.values()),
                      *(figure.to_json() for figure in view.figures.values())]).encode()


def test_no_output_holds_a_prolific_id(shown):
    leaks = {what: [i for i in IDENTIFIERS if i.encode() in blob] for what, blob in shown.items()}
    assert {what: ids for what, ids in leaks.items() if ids} == {}
    assert len(shown) > 15  # every view, each session's, the report, the exports


def test_participants_are_named_by_pseudonym_and_annotators_as_annotator_n(people, shown):
    for what in ("report", "dataset", "public dataset", "questionnaire answers", "session picker"):
        assert all(p.encode() in shown[what] for p in people.pseudonyms), what
    judgments = pd.read_csv(io.BytesIO(shown["judgments.csv"]))
    assert set(judgments["annotator"]) == {"annotator-1", "annotator-2"} and "external_id" not in judgments
    assert set(pd.read_parquet(io.BytesIO(shown["judgments.parquet"]))["annotator"]) == {"annotator-1", "annotator-2"}
    overview = shown["view overview Study overview"]
    assert b"annotator-1" in overview
    # who could not connect is counted (from their Prolific IDs, inside), not named
    assert b"4 run, 1 passed, 3 failed; 1 people (by the study link's id) never passed" in overview


def test_the_payments_table_is_where_the_prolific_ids_are(people, tmp_path):
    out = tmp_path / "payments.csv"
    done = run_cli("analysis", "payments", "--study", STUDY, "--out", out, "--database-url", people.url)
    assert done.returncode == 0, done.stderr
    assert oct(out.stat().st_mode & 0o777) == "0o600"
    table = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert list(table.columns) == ["kind", "pseudonym", "prolific_id", "completion_code", "status", "started_at",
                                   "time_taken_s"]
    table = table.set_index("prolific_id")
    assert set(table.index) == set(IDENTIFIERS)
    for k, prolific in enumerate(PROLIFIC):
        row = table.loc[prolific]
        assert (row["kind"], row["pseudonym"]) == ("participant", people.pseudonyms[k])
        assert (row["completion_code"], row["status"]) == (("CODE" + str(k), "completed") if k < 3 else
                                                           ("", "not finished"))
        assert float(row["time_taken_s"]) == CALL_S  # consent to the end of the call
    first, second = (table.loc[a] for a in ANNOTATORS)
    assert (first["pseudonym"], first["completion_code"], first["status"], first["time_taken_s"]) == (
        "annotator-1", "ANNCODE", "completed", "900.0")
    assert (second["pseudonym"], second["status"], second["time_taken_s"]) == ("annotator-2", "not finished", "")
    never = table.loc[NEVER_CONNECTED]
    assert (never["kind"], never["completion_code"], never["status"]) == (
        "could not connect", "NOCONN", "could not take part")
    assert never["pseudonym"].startswith("check-")
    # who took the identifiers out is in the audit trail, and the exports before it (module fixture `shown`
    # may or may not have run: the payments export is the newest event)
    latest = audit_trail.events(people.engine, limit=1)[0]
    assert (latest.actor.startswith("cli:"), latest.action, latest.object) == (True, "exported_payments", STUDY)


def test_payments_of_an_unknown_study_is_one_line(people, tmp_path):
    bad = run_cli("analysis", "payments", "--study", "nope", "--out", tmp_path / "x.csv", "--database-url", people.url)
    assert (bad.returncode, bad.stderr) == (2, "error: no study named 'nope'\n") and not (tmp_path / "x.csv").exists()

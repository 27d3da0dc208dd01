"""A researcher's erasure of one person and the studies' retention periods, on real databases
(SQLite and PostgreSQL) and real files: `python -m studies erase` and `python -m studies retention`.

The erased person's identifiers are looked for in the database's bytes (SQLite's file, log and
shared memory: free pages and old log frames included; PostgreSQL's full dump) and in every file
under the data root; the other people's rows and files must be byte-identical to before.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
import sqlalchemy as sa
from sqlmodel import select

from storage.db import init_db, make_engine, session_scope
from storage.erasure import AlreadyErased, ErasureError, erase, erasure_plan
from storage.models import Annotator, ConnectionCheck, DialogueSystem, ErasureRecord, Participant, Recording
from storage.records import get_or_create_participant, get_study, hash_token, start_session
from studies.retention import apply_expired, expired
from tests.command_line import run_cli
from tests.databases import database_bytes
from tests.studies.people_data import files_under, people_study

T0 = datetime(2027, 3, 1, 12, 0, tzinfo=timezone.utc)


def _rows(engine, exclude_tables=("erasure_record", "analysis_request", "alembic_version")) -> dict:
    """Every row of every table, as tuples."""
    with engine.connect() as connection:
        tables = sa.inspect(connection).get_table_names()
        return {t: sorted(map(tuple, connection.exec_driver_sql(f'SELECT * FROM "{t}"').fetchall()), key=repr)
                for t in tables if t not in exclude_tables}


def _without(rows: dict, ids: dict) -> dict:
    """`rows` less the rows whose first column (id) is in ids[table]."""
    return {t: [r for r in rs if r[0] not in ids.get(t, ())] for t, rs in rows.items()}


@pytest.fixture
def engine(db_url):
    """Both databases (this folder's own `engine` is SQLite only)."""
    engine = make_engine(db_url)
    init_db(engine)
    yield engine
    engine.dispose()


@pytest.fixture
def study(engine, tmp_path, dialogue_wav):
    data_root = tmp_path / "data"
    people = people_study(engine, data_root, dialogue_wav, [T0 - timedelta(days=d) for d in (400, 100, 10)])
    return engine, data_root, people


def test_an_erased_participant_leaves_no_trace_and_the_others_are_untouched(study):
    engine, data_root, people = study
    gone, kept = people[0], people[1:]
    plan = erasure_plan(engine, "rights", "participant", gone.prolific_id)
    rows, files = _rows(engine), files_under(data_root)
    # the test looks where they are
    assert any(gone.pseudonym.encode() in blob for blob in files.values())
    assert gone.prolific_id.encode() in database_bytes(engine) and gone.pseudonym.encode() in database_bytes(engine)

    outcome = erase(engine, "rights", "participant", gone.pseudonym, erased_by="ana", data_root=data_root)

    # exactly what the dry run listed went: rows by id, files by path
    assert outcome.plan.rows == plan.rows and outcome.plan.paths == plan.paths
    after = _rows(engine)
    # one event in the audit trail says who erased, and names nobody
    assert [(e[2], e[4], e[5]) for e in after.pop("audit_event")] == [("ana", "erased", f"erasure record {outcome.record_id}")]
    assert after == {table: kept for table, kept in _without(rows, plan.rows).items() if table != "audit_event"}
    expected_files = {p: b for p, b in files.items()
                      if not any(p == path or p.startswith(path + "/") for path in plan.paths)}
    assert files_under(data_root) == expected_files
    assert plan.counts()["conversation_session"] == 2 and plan.counts()["judgment"] == 1  # its clip's pair too
    for identifier in (gone.pseudonym, gone.prolific_id):
        assert identifier.encode() not in database_bytes(engine)
        assert not [p for p, b in files_under(data_root).items() if identifier.encode() in b]
    for person in kept:  # still there, by both names
        assert person.prolific_id.encode() in database_bytes(engine)
    with session_scope(engine) as session:
        [record] = session.exec(select(ErasureRecord)).all()
        assert (record.reason, record.erased_by, record.counts["files"]) == ("erased", "ana", outcome.files_removed)
    print(f"erased: {outcome.plan.counts()}, {outcome.files_removed} files, {outcome.bytes_removed} bytes")

    # a second request, by either name: already erased, nothing changes
    after = _rows(engine)
    for identifier in (gone.prolific_id, gone.pseudonym):
        with pytest.raises(AlreadyErased, match="already erased"):
            erase(engine, "rights", "participant", identifier, erased_by="ana", data_root=data_root)
    with pytest.raises(ErasureError, match="has no participant 'PRLFC-NOBODY'"):
        erase(engine, "rights", "participant", "PRLFC-NOBODY", erased_by="ana", data_root=data_root)
    with pytest.raises(ErasureError, match="no study called 'nope'"):
        erase(engine, "nope", "participant", kept[0].prolific_id, erased_by="ana", data_root=data_root)
    assert _rows(engine) == after


def test_the_erase_command_dry_runs_answers_bad_input_in_one_line_and_erases(study, monkeypatch):
    engine, data_root, people = study
    monkeypatch.setenv("TURNTAKING_DATA", str(data_root))
    url = engine.url.render_as_string(hide_password=False)
    before = _rows(engine)
    dry = run_cli("studies", "--url", url, "erase", "--study", "rights", "--participant", people[1].prolific_id,
                  "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "conversation_session: 2 row(s)" in dry.stdout and f"file: sessions/{people[1].sessions[0]}" in dry.stdout
    assert _rows(engine) == before
    unknown = run_cli("studies", "--url", url, "erase", "--study", "rights", "--participant", "PRLFC-NOBODY")
    assert unknown.returncode == 1 and unknown.stderr.count("\n") == 1 and "has no participant" in unknown.stderr
    done = run_cli("studies", "--url", url, "erase", "--study", "rights", "--participant", people[1].prolific_id,
                   "--by", "ana")
    assert done.returncode == 0 and "erased participant" in done.stdout
    again = run_cli("studies", "--url", url, "erase", "--study", "rights", "--participant", people[1].pseudonym)
    assert again.returncode == 0 and "already erased" in again.stdout and "by ana" in again.stdout
    annotator = run_cli("studies", "--url", url, "erase", "--study", "rights", "--annotator", "PRLFC-ANNOTATOR-0")
    assert annotator.returncode == 0 and "judgment 1" in annotator.stdout


def test_retention_removes_exactly_what_its_dry_run_lists(study, monkeypatch):
    engine, data_root, people = study
    with session_scope(engine) as session:  # the study file's periods
        row = get_study(session, "rights")
        row.config = {**row.config, "retention": {"identifiers_days": 30, "recordings_days": 90, "all_days": 365}}
        session.add(row)
    monkeypatch.setenv("TURNTAKING_DATA", str(data_root))
    url = engine.url.render_as_string(hide_password=False)
    files = files_under(data_root)

    listed = run_cli("studies", "--url", url, "retention", "--study", "rights", "--now", T0.isoformat())
    assert listed.returncode == 0, listed.stderr
    items = expired(engine, "rights", T0)
    assert [item.line() for item in items] == listed.stdout.splitlines()[:-1]
    assert sorted((i.rule, i.subject, i.row_id) for i in items) == sorted([
        ("all", "participant", people[0].row_id), ("all", "annotator", 1),
        ("recordings", "participant", people[1].row_id), ("identifiers", "participant", people[1].row_id)])
    assert files_under(data_root) == files  # a dry run

    applied = run_cli("studies", "--url", url, "retention", "--study", "rights", "--now", T0.isoformat(), "--apply")
    assert applied.returncode == 0 and f"removed {len(items)} expired item(s)" in applied.stdout
    assert expired(engine, "rights", T0) == []  # nothing listed is left
    with session_scope(engine) as session:
        participants = {p.id: p for p in session.exec(select(Participant)).all()}
        assert people[0].row_id not in participants
        assert participants[people[1].row_id].external_id is None  # the pseudonym stays
        assert participants[people[1].row_id].pseudonym == people[1].pseudonym
        assert participants[people[2].row_id].external_id == people[2].prolific_id  # not expired
        kept = session.exec(select(Recording.session_id)).all()
        assert set(kept) == set(people[2].sessions)  # person 1's recordings went, person 2's stay
        assert sorted(session.exec(select(ConnectionCheck.external_id)).all(), key=str) == \
            [None, people[2].prolific_id]
    now_files = files_under(data_root)
    for session_id in people[1].sessions:  # the measures stay: the network log
        assert sorted(p for p in now_files if p.startswith(f"sessions/{session_id}/")) == \
            [f"sessions/{session_id}/network.jsonl"]
    assert {p: b for p, b in files.items() if any(p.startswith(f"sessions/{i}/") for i in people[2].sessions)} == \
        {p: b for p, b in now_files.items() if any(p.startswith(f"sessions/{i}/") for i in people[2].sessions)}
    assert apply_expired(engine, "rights", [], data_root) == 0
    bad = run_cli("studies", "--url", url, "retention", "--study", "rights", "--now", "2027-01-01")
    assert bad.returncode == 1 and "needs a time zone" in bad.stderr


def test_a_study_without_retention_says_nothing_expires(engine, tmp_path, dialogue_wav, monkeypatch):
    people_study(engine, tmp_path / "data", dialogue_wav, [T0 - timedelta(days=4000)], name="forever")
    url = engine.url.render_as_string(hide_password=False)
    monkeypatch.setenv("TURNTAKING_DATA", str(tmp_path / "data"))
    done = run_cli("studies", "--url", url, "retention", "--study", "forever", "--apply")
    assert done.returncode == 0 and "nothing expires" in done.stdout
    assert expired(engine, "forever", T0) == []


def test_an_erased_persons_ids_are_never_given_again(study):
    # SQLite gives a new row the largest id + 1: the next one after an erased last participant would
    # take their id, their counterbalanced place, their session folders, and (annotators) their
    # name `annotator-N`
    engine, data_root, people = study
    last = people[-1]
    erase(engine, "rights", "participant", last.pseudonym, erased_by="ana", data_root=data_root)
    erase(engine, "rights", "annotator", "PRLFC-ANNOTATOR-0", erased_by="ana", data_root=data_root)
    with session_scope(engine) as session:
        study_row = get_study(session, "rights")
        newcomer = get_or_create_participant(session, study_row, external_id="PRLFC-NEW")
        annotator = Annotator(study_id=study_row.id, token_hash=hash_token("new"), external_id="PRLFC-NEW-A")
        session.add(annotator)
        system = session.exec(select(DialogueSystem).where(DialogueSystem.study_id == study_row.id)).first()
        conversation = start_session(session, newcomer, system, "a hike")
        session.flush()
        assert newcomer.id > last.row_id and annotator.id > 1 and conversation.id > max(last.sessions)
    # a request naming the erased annotator is answered "already erased", not by erasing a new one
    with pytest.raises(AlreadyErased):
        erase(engine, "rights", "annotator", "annotator-1", erased_by="ana", data_root=data_root)

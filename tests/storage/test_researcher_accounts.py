"""Researcher accounts from the command line (`python -m storage researcher ...`) and the audit
trail, on a real SQLite file and a real PostgreSQL database: passwords kept as Argon2id hashes
only, a disabled account and a wrong password refused, bad input answered in one line with
nothing changed, and a trail the database itself refuses to change or delete."""

from __future__ import annotations

import io
import sys

import pytest
import sqlalchemy as sa
from sqlmodel import select

from storage import audit_trail
from storage.__main__ import main as storage_main
from storage.db import session_scope
from storage.models import ResearcherAccount
from storage.researcher_accounts import authenticate
from studies.config import apply_config, parse_config
from tests.databases import database_bytes, engine  # noqa: F401  (pytest fixture)

SHARED = ("researcher", "the-shared-password")


def storage_cli(engine, *args, stdin: str = "", capsys=None) -> tuple[int, str, str]:
    url = engine.url.render_as_string(hide_password=False)
    saved = sys.stdin
    sys.stdin = io.StringIO(stdin)
    try:
        try:
            code = storage_main(["--url", url, *args])
        except SystemExit as exc:  # argparse's usage errors
            code = exc.code
    finally:
        sys.stdin = saved
    out, err = capsys.readouterr()
    return code, out, err


def test_accounts_are_added_listed_disabled_and_reset_with_hashed_passwords(engine, capsys):
    with session_scope(engine) as session:
        apply_config(session, parse_config({"name": "s1", "systems": [{"name": "c", "kind": "cascaded"}]}))
    assert storage_cli(engine, "researcher", "add", "ana", "--role", "analyst", "--study", "s1",
                       stdin="correct horse battery\n", capsys=capsys)[0] == 0
    code, out, _ = storage_cli(engine, "researcher", "list", capsys=capsys)
    assert code == 0 and out.split() == ["ana", "analyst", "active", "s1"]
    ana = authenticate(engine, "ana", "correct horse battery", SHARED)
    assert (ana.name, ana.role, ana.study_ids) == ("ana", "analyst", (1,))
    assert authenticate(engine, "ana", "correct horse batterY", SHARED) is None
    # the password is nowhere in the database, only its Argon2id hash
    with session_scope(engine) as session:
        stored = session.exec(select(ResearcherAccount.password_hash)).one()
    assert stored.startswith("$argon2id$") and b"correct horse" not in database_bytes(engine)

    assert storage_cli(engine, "researcher", "reset-password", "ana", stdin="a new long password\n", capsys=capsys)[0] == 0
    assert authenticate(engine, "ana", "correct horse battery", SHARED) is None
    assert authenticate(engine, "ana", "a new long password", SHARED) is not None
    assert storage_cli(engine, "researcher", "disable", "ana", capsys=capsys)[0] == 0
    assert authenticate(engine, "ana", "a new long password", SHARED) is None
    # the shared password is the owner `researcher` until that name is disabled
    assert authenticate(engine, *SHARED, SHARED).role == "owner"
    assert storage_cli(engine, "researcher", "disable", "researcher", capsys=capsys)[0] == 0
    assert authenticate(engine, *SHARED, SHARED) is None

    actions = [(e.actor.startswith("cli:"), e.action, e.object) for e in audit_trail.events(engine)][::-1]
    assert actions == [(True, "account_added", "ana"), (True, "password_reset", "ana"),
                       (True, "account_disabled", "ana"), (True, "account_disabled", "researcher")]


@pytest.mark.parametrize("args, stdin, message", [
    (("researcher", "add", "bo", "--role", "viewer"), "short\n", "a password needs at least 10 characters"),
    (("researcher", "add", "bo", "--role", "viewer", "--study", "nope"), "long enough pass\n", "no study named 'nope'"),
    (("researcher", "disable", "nobody"), "", "no account named 'nobody'"),
    (("researcher", "reset-password", "nobody"), "long enough pass\n", "no account named 'nobody' with a password"),
])
def test_bad_account_requests_get_one_line_and_change_nothing(engine, capsys, args, stdin, message):
    before = database_bytes(engine) if engine.dialect.name == "sqlite" else None
    code, out, err = storage_cli(engine, *args, stdin=stdin, capsys=capsys)
    assert code == 1 and err.strip() == f"error: {message}" and "Traceback" not in out + err
    with session_scope(engine) as session:
        assert session.exec(select(ResearcherAccount)).all() == []
    assert audit_trail.events(engine) == []
    if before is not None:
        assert database_bytes(engine) == before


def test_a_second_account_of_one_name_is_refused(engine, capsys):
    assert storage_cli(engine, "researcher", "add", "ana", "--role", "owner", stdin="long enough pass\n",
                       capsys=capsys)[0] == 0
    code, _, err = storage_cli(engine, "researcher", "add", "ana", "--role", "viewer", stdin="other long pass\n",
                               capsys=capsys)
    assert code == 1 and err.strip() == "error: an account named 'ana' exists"
    assert authenticate(engine, "ana", "long enough pass").role == "owner"


def test_the_database_refuses_to_change_or_delete_the_audit_trail(engine):
    audit_trail.record(engine, "ana", "opened_session", object="session 1", address="198.51.100.4", study="s1")
    statements = ["UPDATE audit_event SET actor = 'someone else'", "DELETE FROM audit_event"]
    if engine.dialect.name == "postgresql":
        statements.append("TRUNCATE audit_event")
    for statement in statements:
        with pytest.raises(sa.exc.DBAPIError, match="append-only"):
            with engine.begin() as connection:
                connection.exec_driver_sql(statement)
    [event] = audit_trail.events(engine)
    assert (event.actor, event.action, event.object, event.detail) == ("ana", "opened_session", "session 1",
                                                                      {"study": "s1"})
    with pytest.raises(ValueError, match="unknown audit action"):
        audit_trail.record(engine, "ana", "looked_around")


def test_the_trail_exports_as_csv_for_its_owner_only(engine, tmp_path, capsys):
    audit_trail.record(engine, "ana", "exported_dataset", object="s1", address="198.51.100.4")
    out = tmp_path / "audit.csv"
    code, printed, _ = storage_cli(engine, "audit", "--out", str(out), capsys=capsys)
    assert code == 0 and printed.strip() == f"1 events -> {out}"
    assert out.stat().st_mode & 0o777 == 0o600
    lines = out.read_text().splitlines()
    assert lines[0] == ",".join(audit_trail.CSV_COLUMNS) and ",ana,198.51.100.4,exported_dataset,s1," in lines[1]
    assert [e.action for e in audit_trail.events(engine)] == ["exported_audit", "exported_dataset"]

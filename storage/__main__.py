"""Command line: create, upgrade and inspect the database; seed the demo study.

    python -m storage init [--url URL]             # create / upgrade the schema to the newest revision
    python -m storage upgrade [REVISION] [--url URL]
    python -m storage current [--url URL]          # revision of the database and of the code
    python -m storage seed-demo [--url URL]        # init, then add the demo study (idempotent)
    python -m storage diff [--url URL]             # what models.py has that the database lacks

Researchers' accounts (storage.researcher_accounts), the audit trail (storage.audit_trail) and
backups (storage.backup):

    python -m storage researcher add NAME --role viewer|analyst|owner [--study S ...]
    python -m storage researcher list | disable NAME | reset-password NAME
                                        # a password: the first line of stdin, or asked twice
    python -m storage audit --out audit.csv
    python -m storage backup DIR [--data ROOT]          # while the app runs
    python -m storage verify DIR
    python -m storage restore DIR --data ROOT          # into an empty data root (and --url: an empty database)

URL defaults to DATABASE_URL, else SQLite turntaking.db in the data root (TURNTAKING_DATA or ./data).
"""

from __future__ import annotations

import argparse
import getpass
import sys
from pathlib import Path

import sqlalchemy as sa

from sqlmodel import select

from storage.db import (
    DatabaseError,
    current_revision,
    default_database_url,
    head_revision,
    init_db,
    make_engine,
    schema_differences,
    session_scope,
    upgrade,
)
from storage import audit_trail
from storage.backup import BackupError, backup, restore, verify
from storage.demo import seed_demo_study
from storage.files import default_data_root
from storage.models import RESEARCHER_ROLES, DialogueSystem
from storage.researcher_accounts import AccountError, accounts, add_account, disable_account, reset_password

SHARED_ACCOUNT = "researcher"  # the shared password's owner account (app.py), which `disable` can close


def _describe(difference) -> str:
    """One line per alembic autogenerate difference, e.g. `add_table analysis_result`."""
    if isinstance(difference, tuple) and hasattr(difference[1], "name"):
        return f"{difference[0]} {difference[1].name}"
    return repr(difference)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m storage", description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="database URL (default: DATABASE_URL, else SQLite in the data root)")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("init", help="create or upgrade the schema to the newest revision")
    up = commands.add_parser("upgrade", help="upgrade the schema to REVISION (default: head)")
    up.add_argument("revision", nargs="?", default="head")
    commands.add_parser("current", help="print the database's revision and the newest one")
    commands.add_parser("seed-demo", help="init, then create the demo study if missing")
    commands.add_parser("diff", help="differences between the database and models.py (for writing migrations)")
    people = commands.add_parser("researcher", help="the researcher area's accounts")
    people_commands = people.add_subparsers(dest="account_command", required=True)
    add = people_commands.add_parser("add", help="a new account (its password: stdin's first line, or asked)")
    add.add_argument("name")
    add.add_argument("--role", required=True, choices=RESEARCHER_ROLES)
    add.add_argument("--study", action="append", default=[], help="a study the account may open (repeat)")
    people_commands.add_parser("list", help="every account, its role and studies")
    for name, text in (("disable", "the account can no longer log in"), ("reset-password", "a new password")):
        people_commands.add_parser(name, help=text).add_argument("name")
    audit = commands.add_parser("audit", help="the audit trail as CSV")
    audit.add_argument("--out", required=True, type=Path)
    for name, text in (("backup", "a consistent copy of the database and the data root into DIR (new or empty)"),
                       ("verify", "check every file of the backup in DIR against its manifest"),
                       ("restore", "the backup in DIR into an empty data root (and --url: an empty database)")):
        command = commands.add_parser(name, help=text)
        command.add_argument("folder", type=Path, metavar="DIR")
        if name != "verify":
            command.add_argument("--data", type=Path, required=name == "restore",
                                 help="the data root (backup: default TURNTAKING_DATA or ./data)")
    args = parser.parse_args(argv)
    if args.command in ("verify", "restore"):
        return _backup_command(args, None)

    url = args.url or default_database_url()
    try:
        engine = make_engine(url)
        try:
            if args.command == "init":
                init_db(engine)
                print(f"{engine.url.render_as_string()}: at revision {current_revision(engine)} (head)")
            elif args.command == "upgrade":
                upgrade(engine, args.revision)
                print(f"{engine.url.render_as_string()}: at revision {current_revision(engine)}")
            elif args.command == "current":
                current, head = current_revision(engine), head_revision()
                state = "up to date" if current == head else f"needs upgrade to {head}"
                print(f"{engine.url.render_as_string()}: revision {current or 'none (empty)'}, {state}")
            elif args.command == "seed-demo":
                init_db(engine)
                with session_scope(engine) as session:
                    study = seed_demo_study(session)
                    systems = session.exec(select(DialogueSystem).where(DialogueSystem.study_id == study.id)
                                           .order_by(DialogueSystem.id)).all()  # as seeded, on every backend
                    names = ", ".join(f"{s.name} ({s.kind})" for s in systems)
                topics = len(study.config["topics"])
                print(f"study {study.name!r} (id {study.id}) with {topics} topics; systems: {names}")
            elif args.command == "researcher":
                _account_command(engine, args)
            elif args.command == "audit":
                count = audit_trail.write_csv(engine, args.out)
                audit_trail.record(engine, audit_trail.command_line_actor(), "exported_audit", object=str(args.out))
                print(f"{count} events -> {args.out}")
            elif args.command == "backup":
                return _backup_command(args, engine)
            elif args.command == "diff":
                differences = schema_differences(engine)
                for difference in differences:
                    print(_describe(difference))
                if not differences:
                    print("no differences")
        finally:
            engine.dispose()
    except (AccountError, BackupError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except (DatabaseError, sa.exc.SQLAlchemyError) as e:
        message = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        print(f"error: {message}", file=sys.stderr)
        return 1
    except Exception as e:  # alembic reports unknown revisions etc. as its own CommandError
        if type(e).__module__.startswith("alembic"):
            print(f"error: {str(e).strip().splitlines()[0]}", file=sys.stderr)
            return 1
        raise
    return 0


def _new_password() -> str:
    if not sys.stdin.isatty():
        return sys.stdin.readline().rstrip("\n")
    first = getpass.getpass("password: ")
    if getpass.getpass("again: ") != first:
        raise AccountError("the two passwords differ")
    return first


def _account_command(engine, args) -> None:
    actor = audit_trail.command_line_actor()
    if args.account_command == "list":
        for account in accounts(engine):
            print(f"{account['name']:20} {account['role']:8} {account['state']:9} {account['studies']}")
    elif args.account_command == "add":
        add_account(engine, args.name, args.role, _new_password(), args.study)
        audit_trail.record(engine, actor, "account_added", object=args.name, role=args.role, studies=args.study)
        print(f"account {args.name!r} added ({args.role})")
    elif args.account_command == "disable":
        disable_account(engine, args.name, shared_name=SHARED_ACCOUNT)
        audit_trail.record(engine, actor, "account_disabled", object=args.name)
        print(f"account {args.name!r} disabled")
    else:
        reset_password(engine, args.name, _new_password())
        audit_trail.record(engine, actor, "password_reset", object=args.name)
        print(f"password of {args.name!r} reset")


def _backup_command(args, engine) -> int:
    """backup (with the open `engine`), verify, restore: one line on error, exit 1."""
    from tqdm import tqdm

    bar = tqdm(unit="file", desc=args.command, leave=False)

    def progress(done: int, total: int) -> None:
        bar.total = total
        bar.n = done
        bar.refresh()

    try:
        if args.command == "backup":
            summary = backup(engine, args.data or default_data_root(), args.folder, progress)
            audit_trail.record(engine, audit_trail.command_line_actor(), "backup", object=str(args.folder),
                               files=summary.files, bytes=summary.bytes)
            print(f"{args.folder}: {summary.database} database and {summary.files} files ({summary.bytes} bytes)")
        elif args.command == "verify":
            manifest = verify(args.folder, progress)
            print(f"{args.folder}: intact ({manifest['database']['backend']} database, {len(manifest['files'])} files)")
        else:
            url = restore(args.folder, args.data, args.url, progress)
            engine = make_engine(url)
            try:
                audit_trail.record(engine, audit_trail.command_line_actor(), "restore", object=str(args.folder))
            finally:
                engine.dispose()
            print(f"restored into {args.data} (database {sa.make_url(url).render_as_string()})")
    except (BackupError, OSError, sa.exc.SQLAlchemyError) as e:
        bar.close()
        print(f"error: {str(e).strip().splitlines()[0]}", file=sys.stderr)
        return 1
    bar.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Command line: create, upgrade and inspect the database; seed the demo study.

    python -m storage init [--url URL]             # create / upgrade the schema to the newest revision
    python -m storage upgrade [REVISION] [--url URL]
    python -m storage current [--url URL]          # revision of the database and of the code
    python -m storage seed-demo [--url URL]        # init, then add the demo study (idempotent)
    python -m storage diff [--url URL]             # what models.py has that the database lacks

URL defaults to DATABASE_URL, else SQLite turntaking.db in the data root (TURNTAKING_DATA or ./data).
"""

from __future__ import annotations

import argparse
import sys

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
from storage.demo import seed_demo_study
from storage.models import DialogueSystem


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
    args = parser.parse_args(argv)

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
            elif args.command == "diff":
                differences = schema_differences(engine)
                for difference in differences:
                    print(_describe(difference))
                if not differences:
                    print("no differences")
        finally:
            engine.dispose()
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


if __name__ == "__main__":
    sys.exit(main())

"""Command line of the participant area.

    python -m studies load-config STUDY.yaml [--url URL]   # create / update a study from its file
    python -m studies call SYSTEM_KIND USER.wav OUT.wav      # "call" a system with a WAV on a simulated clock
    python -m studies sweep [--url URL]                      # mark sessions left open as incomplete

URL defaults to DATABASE_URL, else SQLite turntaking.db in the data root.
"""

from __future__ import annotations

import argparse
import json
import sys

from storage.db import (
    DatabaseError,
    default_database_url,
    init_db,
    make_engine,
    session_scope,
)
from storage.models import DialogueSystem
from studies.config import StudyConfigError, apply_config, load_config
from studies.offline_call import OfflineCallError, run_offline_call
from studies.sessions import mark_open_sessions_incomplete


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m studies", description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="database URL (default: DATABASE_URL, else SQLite in the data root)")
    commands = parser.add_subparsers(dest="command", required=True)
    load = commands.add_parser("load-config", help="create or update a study from a YAML/TOML file")
    load.add_argument("file")
    commands.add_parser("sweep", help="mark sessions left open (server killed) as incomplete")
    call = commands.add_parser("call", help="talk to a dialogue system with a WAV file on a simulated real-time clock")
    call.add_argument("user_wav", help="the participant's side (any rate; mono or first channel)")
    call.add_argument("out_wav", help="two-channel recording to write (participant, system), 16 kHz")
    call.add_argument("--kind", default="cascaded", help="system kind (default: cascaded)")
    call.add_argument("--config", default="{}", help="system config as JSON, e.g. '{\"barge_in\": \"yield\"}'")
    call.add_argument("--tail", type=float, default=4.0, help="seconds of silence after the file ends (default 4)")
    args = parser.parse_args(argv)

    try:
        if args.command == "load-config":
            return _load_config(args)
        if args.command == "sweep":
            return _sweep(args)
        if args.command == "call":
            return _call(args)
    except (StudyConfigError, DatabaseError) as e:  # a bad file or --url: one line, no traceback
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


def _engine(url):
    engine = make_engine(url or default_database_url())
    init_db(engine)
    return engine


def _load_config(args) -> int:
    from sqlmodel import select

    config = load_config(args.file)
    engine = _engine(args.url)
    with session_scope(engine) as session:
        study = apply_config(session, config)
        systems = session.exec(
            select(DialogueSystem).where(DialogueSystem.study_id == study.id).order_by(DialogueSystem.id)
        ).all()
        names = ", ".join(f"{s.name} ({s.kind})" for s in systems)
    print(
        f"study {study.name!r} (id {study.id}): {len(config.topics)} topics, {config.session_seconds} s sessions, "
        f"{config.assignment} assignment; systems: {names}"
    )
    return 0


def _sweep(args) -> int:
    engine = _engine(args.url)
    ids = mark_open_sessions_incomplete(engine)
    print(f"marked {len(ids)} open session(s) incomplete" + (f": {ids}" if ids else ""))
    return 0


def _call(args) -> int:
    try:
        config = json.loads(args.config)
    except json.JSONDecodeError as e:
        print(f"error: --config is not valid JSON: {e}", file=sys.stderr)
        return 1
    try:
        result = run_offline_call(args.user_wav, args.out_wav, kind=args.kind, config=config, tail_s=args.tail)
    except OfflineCallError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(json.dumps(result.summary(), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Command line of the participant area.

    python -m studies load-config STUDY.yaml [--url URL]   # create / update a study from its file
    python -m studies call USER.wav OUT.wav [--kind KIND]    # "call" a system with a WAV on a simulated clock;
                                                             # says whether the call is analysable, and why not
    python -m studies sweep [--url URL]                      # mark sessions left open as incomplete
    python -m studies erase --study S (--participant ID | --annotator ID) [--dry-run] [--by NAME]
                                     # every row and file of one person (Prolific ID or pseudonym)
    python -m studies retention --study S [--apply] [--now ISO-TIME]
                                     # what the study's retention periods remove now (--apply: remove it)
    python -m studies replies CALL.jsonl [--json]          # whether a call's replies answered their turns
                                     # (a timing log: relevance, apologies, disclaimers, sentences)
    python -m studies serve-realtime [--system cascaded] [--host 127.0.0.1] [--port 8765] [--api-key-file FILE]
                                     # the embedded system as an OpenAI-Realtime-compatible server
                                     # (its key: FILE or TURNTAKING_REALTIME_API_KEY; required off loopback)

URL defaults to DATABASE_URL, else SQLite turntaking.db in the data root.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import stat
import sys
from datetime import datetime

from speech.models import ModelError
from storage import audit_trail
from storage.db import (
    DatabaseError,
    default_database_url,
    init_db,
    make_engine,
    session_scope,
)
from storage.models import DialogueSystem
from studies.call_quality import recording_quality
from storage.records import get_study
from storage.erasure import AlreadyErased, ErasureError, erase, erasure_plan
from studies.config import DEFAULT_MIN_CALL_SECONDS, StudyConfigError, apply_config, load_config, study_settings
from studies.offline_call import OfflineCallError, run_offline_call
from systems.api_keys import REALTIME_KEY_ENV, ApiKeyError, is_loopback, server_key
from studies.realtime_server import KeyCheck, ServerState, load_models, serve_forever
from studies.recorder import SYSTEM_CHANNEL
from studies.reply_quality import exchanges_from_log, packaged_scorer, reply_qualities, summarize
from studies.retention import apply_expired, expired
from studies.sessions import mark_open_sessions_incomplete
from systems import SystemError_
from systems.kinds import KIND_NAMES, SERVABLE_KIND_ALIASES, SERVABLE_KIND_NAMES, system_kind
from systems.models import prepare_packaged_llm
from studies.timing import read_timing_log
from turntaking.commands import json_object_option


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m studies", description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="database URL (default: DATABASE_URL, else SQLite in the data root)")
    commands = parser.add_subparsers(dest="command", required=True)
    load = commands.add_parser("load-config", help="create or update a study from a YAML/TOML file")
    load.add_argument("file")
    commands.add_parser("sweep", help="mark sessions left open (server killed) as incomplete")
    commands.add_parser("prepare-models", help="convert the packaged LLM into the model cache now (TURNTAKING_MODELS, "
                                               "else models/ in the data root), not at the app's first start")
    erase_cmd = commands.add_parser("erase", help="erase every row and file of one participant or annotator")
    erase_cmd.add_argument("--study", required=True)
    who = erase_cmd.add_mutually_exclusive_group(required=True)
    who.add_argument("--participant", metavar="ID", help="the participant's Prolific ID or pseudonym")
    who.add_argument("--annotator", metavar="ID", help="the annotator's Prolific ID or pseudonym (annotator-N)")
    erase_cmd.add_argument("--dry-run", action="store_true", help="list what would be removed; remove nothing")
    erase_cmd.add_argument("--by", default=os.environ.get("USER") or "command line",
                           help="who erases, for the erasure record (default: $USER)")
    retention = commands.add_parser("retention", help="what the study's retention periods remove (--apply: remove it)")
    retention.add_argument("--study", required=True)
    retention.add_argument("--apply", action="store_true", help="remove what has expired (default: list it only)")
    retention.add_argument("--now", help="the time to apply the periods at, ISO 8601 with a zone (default: now)")
    call = commands.add_parser("call", help="talk to a dialogue system with a WAV file on a simulated real-time clock")
    call.add_argument("user_wav", help="the participant's side (any rate; mono or first channel)")
    call.add_argument("out_wav", help="two-channel recording to write (participant, system), 16 kHz")
    call.add_argument("--kind", default="cascaded", help=f"system kind: {', '.join(KIND_NAMES)} (default: cascaded)")
    call.add_argument("--config", default="{}", help="system config as JSON, e.g. '{\"barge_in\": \"yield\"}'")
    call.add_argument("--tail", type=float, default=4.0, help="seconds of silence after the file ends (default 4)")
    call.add_argument("--min-call-seconds", type=float, default=DEFAULT_MIN_CALL_SECONDS,
                      help="a shorter call is not analysable, as a study's min_call_seconds (default "
                           f"{DEFAULT_MIN_CALL_SECONDS:g})")
    replies = commands.add_parser("replies", help="whether a call's replies answered their turns, from its timing "
                                                  "log (studies.reply_quality)")
    replies.add_argument("log", help="the call's timing log (.jsonl, as `call` or a study session writes it)")
    replies.add_argument("--json", action="store_true", help="print JSON (default: a table)")
    server = commands.add_parser("serve-realtime", help="serve the embedded cascade or the cascade with timers "
                                                         "(cascade-backchannel) over the OpenAI Realtime protocol "
                                                         "(one call per connection)")
    server.add_argument("--system", default="cascaded", choices=SERVABLE_KIND_NAMES + SERVABLE_KIND_ALIASES,
                        metavar="KIND", help=f"system kind: {', '.join(SERVABLE_KIND_NAMES)} (default: cascaded)")
    server.add_argument("--config", default="{}", help="system config as JSON (models, barge_in, ...)")
    server.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1; 0.0.0.0: all)")
    server.add_argument("--port", type=int, default=8765, help="port (default 8765; 0: any free port)")
    server.add_argument("--max-calls", type=int, help="refuse calls beyond this many at once (HTTP 503)")
    server.add_argument("--api-key-file", metavar="FILE",
                        help=f"file holding the key clients must send as 'Authorization: Bearer KEY' (else "
                             f"{REALTIME_KEY_ENV}; never on the command line); required unless --host is loopback")
    args = parser.parse_args(argv)

    try:
        if args.command == "load-config":
            return _load_config(args)
        if args.command == "sweep":
            return _sweep(args)
        if args.command == "erase":
            return _erase(args)
        if args.command == "retention":
            return _retention(args)
        if args.command == "prepare-models":
            return _prepare_models()
        if args.command == "call":
            return _call(args)
        if args.command == "replies":
            return _replies(args)
        if args.command == "serve-realtime":
            return _serve_realtime(args)
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
    audit_trail.record(engine, audit_trail.command_line_actor(), "changed_study", object=study.name,
                       file=str(args.file))
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


def _erase(args) -> int:
    engine = _engine(args.url)
    subject, identifier = ("participant", args.participant) if args.participant else ("annotator", args.annotator)
    try:
        if args.dry_run:
            plan = erasure_plan(engine, args.study, subject, identifier)
            print(f"would erase {subject} {identifier!r} of study {args.study!r}:")
            for line in plan.describe():
                print(f"  {line}")
            return 0
        outcome = erase(engine, args.study, subject, identifier, erased_by=args.by, reason="erased")
    except AlreadyErased as e:
        print(str(e))
        return 0
    except ErasureError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    counts = ", ".join(f"{k} {v}" for k, v in outcome.plan.counts().items())
    print(f"erased {subject} {identifier!r} of study {args.study!r}: {counts}; {outcome.files_removed} file(s), "
          f"{outcome.bytes_removed} bytes (erasure record {outcome.record_id})")
    return 0


def _retention(args) -> int:
    now = None
    if args.now:
        try:
            now = datetime.fromisoformat(args.now)
        except ValueError:
            print(f"error: --now {args.now!r} is not an ISO 8601 time", file=sys.stderr)
            return 1
        if now.tzinfo is None:
            print(f"error: --now {args.now!r} needs a time zone (e.g. 2027-01-01T00:00:00+00:00)", file=sys.stderr)
            return 1
    engine = _engine(args.url)
    try:
        items = expired(engine, args.study, now)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    with session_scope(engine) as session:
        periods = study_settings(get_study(session, args.study)).retention
    if not periods:
        print(f"study {args.study!r} has no retention periods: nothing expires")
        return 0
    for item in items:
        print(item.line())
    if not args.apply:
        print(f"{len(items)} item(s) expired; nothing removed (--apply removes them)")
        return 0
    done = apply_expired(engine, args.study, items)
    print(f"removed {done} expired item(s)")
    return 0


def _prepare_models() -> int:
    for folder in prepare_packaged_llm():
        print(f"ready: {folder}")
    return 0


def _call(args) -> int:
    try:
        config = json_object_option(args.config)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    try:
        result = run_offline_call(args.user_wav, args.out_wav, kind=args.kind, config=config, tail_s=args.tail)
    except OfflineCallError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    # Judged as a browser call is when it ends (studies.sessions.finish_session): would the
    # analysis take this call, or leave it out, and why.
    quality = recording_quality(result.out_wav, SYSTEM_CHANNEL, args.min_call_seconds)
    print(json.dumps({**result.summary(), "analysable": quality.analysable, "quality_reason": quality.reason},
                     indent=1))
    if result.failure is not None:  # the recording until then is written and summarised above
        print(f"error: the call failed: {result.failure}", file=sys.stderr)
        return 1
    return 0


def _replies(args) -> int:
    try:
        events = read_timing_log(args.log)
    except OSError as e:
        print(f"error: cannot read {args.log}: {e.strerror}", file=sys.stderr)
        return 1
    exchanges = exchanges_from_log(events)
    if not exchanges:
        print(f"error: {args.log} holds no answered turn (no transcript and reply events of a turn)", file=sys.stderr)
        return 1
    qualities = reply_qualities(packaged_scorer(), [t for t, _ in exchanges], [r for _, r in exchanges])
    summary = summarize(qualities).as_dict()
    if args.json:
        print(json.dumps({"summary": summary, "replies": [
            {"heard": q.turn, "reply": q.reply, "relevance": None if q.relevance is None else round(q.relevance, 3),
             "echo": q.echo, "apology": q.apology, "disclaimer": q.disclaimer, "sentences": q.sentences}
            for q in qualities]}, indent=1))
        return 0
    for q in qualities:
        relevance = "   -  " if q.relevance is None else f"{q.relevance:+.2f}"
        flags = ",".join(f for f, on in (("echo", q.echo), ("apology", q.apology), ("disclaimer", q.disclaimer)) if on)
        print(f"{relevance}  {q.sentences}  {flags or '-':18s} {q.turn!r} -> {q.reply!r}")
    print(json.dumps(summary))
    return 0


def _readable_by_others(path: str) -> bool:
    try:
        return bool(os.stat(os.path.expanduser(path)).st_mode & (stat.S_IRWXG | stat.S_IRWXO))
    except OSError:  # gone since it was read: nothing to warn about
        return False


def _serve_realtime(args) -> int:
    try:
        config = json_object_option(args.config)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    if args.max_calls is not None and args.max_calls < 1:
        print("error: --max-calls must be at least 1", file=sys.stderr)
        return 1
    try:
        key = server_key(args.api_key_file, os.environ)
    except ApiKeyError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    if key is None and not is_loopback(args.host):  # checked before the models load: it fails fast
        print(f"error: --host {args.host} lets other machines in: give the server a key with --api-key-file FILE "
              f"or {REALTIME_KEY_ENV} (without one, anyone who reaches the port can open calls)", file=sys.stderr)
        return 1
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    logging.getLogger("websockets").setLevel(logging.WARNING)
    if key is None:
        logging.warning("no API key: any program on this machine may open calls (loopback only); "
                        "--api-key-file FILE or %s requires one", REALTIME_KEY_ENV)
    else:
        logging.info("every call and GET /status must send the API key (Authorization: Bearer KEY)")
        if args.api_key_file and _readable_by_others(args.api_key_file):
            logging.warning("the key file %s can be read by other users of this machine: chmod 600 it",
                            args.api_key_file)
    args.system = system_kind(args.system).name  # a former name serves as the kind it names now
    print(f"loading the {args.system} system's models ...", flush=True)
    try:
        components = load_models(args.system, config)
    except (SystemError_, ModelError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    state = ServerState(args.system, config, components, max_calls=args.max_calls,
                        key_check=KeyCheck(key) if key is not None else None)
    try:
        asyncio.run(serve_forever(state, args.host, args.port,
                                  on_ready=lambda url: print(f"serving {args.system} on {url}", flush=True)))
    except OSError as e:  # port taken, address not on this machine
        print(f"error: cannot listen on {args.host}:{args.port}: {e.strerror or e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())

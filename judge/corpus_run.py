"""`python -m judge metrics RECORDINGS... --run-dir RUN [--workers N] [--ray-address A]`: each
recording (or each file of a directory or manifest given as the one RECORDING) scored as a Ray
task, resumable, results in RUN/results/*.parquet (jobs/ray_runs.py). The report equals the
single-process one; items that fail are listed and left out."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from jobs.ray_runs import given_items, run_corpus
from judge.metrics import Instances
from judge.reports import load_judge, metrics_from_sessions, session_instances
from speech.pipeline import RECORDING_SUFFIXES
from turntaking.events import EventParams


# A Ray worker process runs many items: it loads the judge once (per parameters).
@lru_cache(maxsize=4)
def _judge(checkpoint, thresholds):
    return load_judge(checkpoint, thresholds)


def metrics_item(path: str, params: dict) -> dict:
    """One recording's session of `metrics_report`: its metric instances and confusion matrix."""
    model, thresholds = _judge(params["checkpoint"], params["thresholds"])
    inst, confusion = session_instances(path, params["system_channel"], model, thresholds,
                                        EventParams.from_dict(params["events"]))
    return {"instances": {name: {"chunks": i.chunks.tolist(), "positive": i.positive.tolist(),
                                 "scores": i.scores.tolist()} for name, i in inst.items()},
            "confusion": confusion.tolist()}


def session_from_item(result: dict):
    """(instances, confusion) back from `metrics_item`'s JSON form."""
    inst = {name: Instances(np.asarray(i["chunks"], dtype=np.int64), np.asarray(i["positive"], dtype=bool),
                            np.asarray(i["scores"], dtype=np.float64)) for name, i in result["instances"].items()}
    return inst, np.asarray(result["confusion"], dtype=np.int64)


def metrics_run(args, events: EventParams) -> dict:
    if args.system_channel is None:
        raise ValueError("--system-channel (0 or 1) is required for recordings of a dialogue system")
    thresholds = load_judge(args.checkpoint, args.thresholds)[1]  # a bad checkpoint fails here, before Ray
    params = {"checkpoint": args.checkpoint, "thresholds": args.thresholds, "system_channel": args.system_channel,
              "events": events.as_dict()}
    summary, results = run_corpus(given_items(args.recordings, RECORDING_SUFFIXES), metrics_item, params, args)
    report = metrics_from_sessions([session_from_item(r) for r in results.values()], list(results),
                                   args.system_channel, thresholds, events)
    return {**report, **summary.as_dict()}

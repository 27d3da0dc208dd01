"""`python -m judge naturalness | metrics RECORDINGS... --run-dir RUN [--workers N] [--ray-address A]`:
each recording (or each file of a directory or manifest given as the one RECORDING) scored as a Ray
task, resumable, results in RUN/results/*.parquet (jobs/ray_runs.py). The reports equal the
single-process ones; items that fail are listed and left out."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np

from jobs.ray_runs import corpus_items, run_corpus
from judge.metrics import Instances
from judge.naturalness import NaturalnessParams
from judge.scorers import TURNNAT_PAPER, UNITS
from judge.scoring import (
    load_judge,
    metrics_from_sessions,
    scorer_for,
    session_instances,
    turnnat_paper_row,
)
from speech.pipeline import RECORDING_SUFFIXES
from turntaking.events import EventParams


def recording_items(recordings) -> list[str]:
    """The recordings, or the files of the one directory or manifest (.txt) given."""
    if len(recordings) == 1 and (Path(recordings[0]).is_dir() or Path(recordings[0]).suffix == ".txt"):
        return corpus_items(recordings[0], RECORDING_SUFFIXES)
    return [str(p) for p in recordings]


# A Ray worker process runs many items: it loads a scorer or the judge once (per parameters).
@lru_cache(maxsize=4)
def _score_file(scorer: str, model_file, audio_cue: bool):
    return scorer_for(scorer, model_file, audio_cue)[1]


@lru_cache(maxsize=4)
def _judge(checkpoint, thresholds):
    return load_judge(checkpoint, thresholds)


def naturalness_item(path: str, params: dict) -> dict:
    """One recording's row of `naturalness_report`."""
    if params["scorer"] == TURNNAT_PAPER:
        return turnnat_paper_row(path, _judge(params["scorer_model"], None)[0])
    return {"recording": path, **_score_file(params["scorer"], params["scorer_model"], params["audio_cue"])(path).as_dict()}


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


def naturalness_run(args, scorer_model) -> dict:
    if args.scorer == TURNNAT_PAPER:
        if args.audio_cue:
            raise ValueError("--audio-cue: the turnnat-paper scorer takes no audio cue (timing-hazard does)")
        units, scorer_params = UNITS[TURNNAT_PAPER], NaturalnessParams().as_dict()
    else:
        scorer = scorer_for(args.scorer, scorer_model, args.audio_cue)[0]  # bad options fail here, before Ray
        units, scorer_params = scorer.units, scorer.params
    params = {"scorer": args.scorer, "scorer_model": scorer_model, "audio_cue": args.audio_cue}
    summary, rows = run_corpus(recording_items(args.recordings), naturalness_item, params, args)
    report = {"scorer": args.scorer, "units": units, "dialogues": list(rows.values()), "params": scorer_params}
    if args.scorer != TURNNAT_PAPER:
        report["audio_cue"] = "smart-turn-v3.2" if args.audio_cue else None
    return {**report, **summary.as_dict()}


def metrics_run(args, events: EventParams) -> dict:
    if args.system_channel is None:
        raise ValueError("--system-channel (0 or 1) is required for recordings of a dialogue system")
    thresholds = load_judge(args.checkpoint, args.thresholds)[1]  # a bad checkpoint fails here, before Ray
    params = {"checkpoint": args.checkpoint, "thresholds": args.thresholds, "system_channel": args.system_channel,
              "events": events.as_dict()}
    summary, results = run_corpus(recording_items(args.recordings), metrics_item, params, args)
    report = metrics_from_sessions([session_from_item(r) for r in results.values()], list(results),
                                   args.system_channel, thresholds, events)
    return {**report, **summary.as_dict()}

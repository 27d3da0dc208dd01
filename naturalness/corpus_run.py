"""`python -m naturalness score RECORDINGS... --run-dir RUN [--workers N] [--ray-address A]`: each
recording (or each file of a directory or manifest given as the one RECORDING) scored as a Ray
task, resumable, results in RUN/results/*.parquet (jobs/ray_runs.py). The report equals the
single-process one (`naturalness.reports.naturalness_report`); items that fail are listed and left out."""

from __future__ import annotations

from functools import lru_cache

from jobs.ray_runs import given_items, run_corpus
from naturalness.reports import CUE, recording_scorer
from naturalness.scorers import load_scorer
from speech.pipeline import RECORDING_SUFFIXES


# A Ray worker process runs many items: it loads a scorer once (per parameters).
@lru_cache(maxsize=4)
def _score_file(scorer: str, model_file, audio_cue: bool):
    return recording_scorer(load_scorer(scorer, model_file), audio_cue)


def naturalness_item(path: str, params: dict) -> dict:
    """One recording's row of `naturalness_report`."""
    return {"recording": path, **_score_file(params["scorer"], params["scorer_model"], params["audio_cue"])(path).as_dict()}


def naturalness_run(args, scorer_model) -> dict:
    scorer = load_scorer(args.scorer, scorer_model)
    recording_scorer(scorer, args.audio_cue)  # bad options fail here, before Ray
    params = {"scorer": args.scorer, "scorer_model": scorer_model, "audio_cue": args.audio_cue}
    summary, rows = run_corpus(given_items(args.recordings, RECORDING_SUFFIXES), naturalness_item, params, args)
    return {"scorer": scorer.name, "units": scorer.units, "dialogues": list(rows.values()), "params": scorer.params,
            "audio_cue": CUE if args.audio_cue else None, **summary.as_dict()}

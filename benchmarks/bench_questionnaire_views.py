"""Speed of the questionnaire views on a 102-session study (34 participants x 3 systems, each
answering after every call and ranking the systems after the last).

    python benchmarks/bench_questionnaire_views.py [--participants 34] [--seconds 120] [--workdir DIR]

Seeds the study (analysis.demo_study: simulated voice activity; analysis.questionnaire_demo:
answers from each session's measured timing plus noise), times the two questionnaire views as the
dashboard's handler draws them (a fresh StudyAnalysis per request, the background analysis on):
first with an empty cache, then after the cache was filled as the background worker fills it
(the fill and the questionnaire statistics' share of it timed too), each view drawn `--rounds`
times, the slowest kept. Target: every view <= 2 s, on the 2-core machine.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

import numpy as np

from analysis import demo_study
from analysis.dashboard import Researcher
from analysis.questionnaire_demo import simulated_calls, store_demo_answers
from analysis.questionnaire_results import compute_statistics
from analysis.study_sessions import load_study_judge
from analysis.views import StudyAnalysis
from storage import db
from storage.db import session_scope
from storage.records import get_or_create_study

STUDY = "bench-questionnaire"
VIEWS = ("questionnaire", "felt_vs_measures")


def seed(engine, root, participants: int, seconds: float) -> dict:
    rng = np.random.default_rng(0)
    with session_scope(engine) as session:
        study = get_or_create_study(session, STUDY, title="Benchmark: questionnaire answers")
        sessions = demo_study.seed_sessions(session, study, root, participants, seconds, rng, audio=False)
        responses = store_demo_answers(session, study, simulated_calls(session, study.id), seed=0)
    return {"sessions": sessions, "participants": participants, "responses": responses}


def timed(label: str, fn, results: dict):
    start = time.perf_counter()
    value = fn()
    took = time.perf_counter() - start
    results[label] = max(took, results.get(label, 0.0))
    print(f"  {label:45s} {took:7.2f} s", flush=True)
    return value


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--checkpoint", help="judge checkpoint (default: the packaged one)")
    parser.add_argument("--workdir", help="where the database goes (default: a temporary folder)")
    parser.add_argument("--participants", type=int, default=34)
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)

    root = Path(args.workdir or tempfile.mkdtemp(prefix="bench-questionnaire-"))
    root.mkdir(parents=True, exist_ok=True)
    engine = db.make_engine(f"sqlite:///{root / 'bench.db'}")
    db.init_db(engine)
    results: dict[str, float] = {}
    print(f"study in {root}")
    print(f"  {timed('seed', lambda: seed(engine, root, args.participants, args.seconds), results)}")
    timed("judge load, at app start", lambda: load_study_judge(args.checkpoint), results)
    researcher = Researcher(engine, root, args.checkpoint, background=True)
    for phase in ("empty cache", "cached"):
        if phase == "cached":
            timed("background fill (every result)", lambda: StudyAnalysis(engine, STUDY, root, args.checkpoint).fill(),
                  results)
            analysis = StudyAnalysis(engine, STUDY, root, args.checkpoint, compute=False)
            timed("questionnaire statistics alone (background)", lambda: compute_statistics(
                analysis.questionnaire_answers, analysis.session_measures, list(analysis.data.systems["system"])),
                results)
        print(f"views, {phase}:")
        for _ in range(args.rounds):
            for key in VIEWS:
                timed(f"{key} ({phase})", lambda key=key: researcher.show(key, STUDY), results)
    views = {k: v for k, v in results.items() if k.split(" (")[0] in VIEWS}
    slowest = max(views, key=views.get)
    print(f"slowest view: {slowest} {views[slowest]:.2f} s (target 2 s)")
    return 0 if views[slowest] <= 2.0 else 1


if __name__ == "__main__":
    sys.exit(main())

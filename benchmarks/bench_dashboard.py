"""Researcher area speed on a large simulated study: 100 sessions of 5 minutes, 10,000 judgments.

    python benchmarks/bench_dashboard.py [--checkpoint CKPT] [--workdir DIR] [--inline]

Seeds the study (analysis.demo_study: voice activity only, 50 sessions per system; 500 benchmark
pairs judged by 20 simulated annotators each; the participants' questionnaire answers), then times every view of the dashboard as its
handler runs it (a fresh StudyAnalysis per request, as in the app):
- as the app serves them (background analysis): the first visit with an empty cache (the views
  read what is cached and say what is computing), then every view again, repeatedly, while a real
  `python -m analysis worker` process fills the cache beside them, then once it is done;
- with --inline, without the background worker: the first visit computes everything inside the
  requests.
Then the session view and the full report. Targets: every view under 2 s, always; the report
under 30 s, on the 2-core machine.
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
from analysis.background import WorkerProcess
from analysis.dashboard import Researcher
from analysis.questionnaire_demo import simulated_calls, store_demo_answers
from analysis.study_sessions import load_study_judge
from storage.analysis_queue import analysis_state
from analysis.report import write_report
from analysis.views import STUDY_VIEWS, StudyAnalysis
from storage import db
from storage.db import session_scope
from storage.records import get_or_create_study

STUDY = "bench"


def seed(engine, root, sessions: int, seconds: float, pairs_per_type: int, annotators: int) -> dict:
    rng = np.random.default_rng(0)
    with session_scope(engine) as session:
        study = get_or_create_study(session, STUDY, title="Benchmark: simulated study")
        n = demo_study.seed_sessions(session, study, root, sessions // 2, seconds, rng, audio=False)
        responses = store_demo_answers(session, study, simulated_calls(session, study.id), seed=0)
        pairs = demo_study.seed_pairs(session, study, pairs_per_type, rng, sources=40)
        judgments = demo_study.seed_judgments(session, study, pairs, annotators, careless=2, per_pair=annotators, rng=rng)
    return {"sessions": n, "formal_pairs": len(pairs["formal"]), "judgments": judgments,
            "questionnaire_responses": responses}


def timed(label: str, fn, results: dict, keep_max: bool = False):
    """Time fn(); `keep_max`: the label keeps its slowest time over repeated calls."""
    start = time.perf_counter()
    value = fn()
    took = time.perf_counter() - start
    results[label] = max(took, results.get(label, 0.0)) if keep_max else took
    print(f"  {label:40s} {took:7.2f} s", flush=True)
    return value


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--checkpoint", help="judge checkpoint (default: the packaged one)")
    parser.add_argument("--workdir", help="where the database and report go (default: a temporary folder)")
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=300.0)
    parser.add_argument("--pairs-per-type", type=int, default=100)
    parser.add_argument("--annotators", type=int, default=20)
    parser.add_argument("--inline", action="store_true",
                        help="views compute in the request (no background worker)")
    args = parser.parse_args(argv)

    root = Path(args.workdir or tempfile.mkdtemp(prefix="bench-dashboard-"))
    root.mkdir(parents=True, exist_ok=True)
    engine = db.make_engine(f"sqlite:///{root / 'bench.db'}")
    db.init_db(engine)
    results: dict[str, float] = {}
    print(f"study in {root}")
    sizes = timed("seed", lambda: seed(engine, root, args.sessions, args.seconds, args.pairs_per_type,
                                        args.annotators), results)
    print(f"  {sizes}")
    if args.inline:
        researcher = Researcher(engine, root, args.checkpoint)
        phases = ("empty cache", "cached")
    else:
        timed("judge load, at app start", lambda: load_study_judge(args.checkpoint), results)
        researcher = Researcher(engine, root, args.checkpoint, background=True)
        phases = ("empty cache", "while the worker fills it", "cached")
    worker = None
    for phase in phases:
        if phase == "while the worker fills it":
            worker = WorkerProcess(engine.url.render_as_string(hide_password=False), root, args.checkpoint, nice=10)
            fill_started = time.perf_counter()
            worker.start()
        rounds = 0
        while True:
            print(f"views, {phase}:")
            for key in STUDY_VIEWS:
                if key == "human":
                    timed(f"{key} ({phase})", lambda: researcher.show_human(STUDY), results, keep_max=True)
                else:
                    timed(f"{key} ({phase})", lambda key=key: researcher.show(key, STUDY), results, keep_max=True)
            if worker is None or phase != "while the worker fills it":
                break
            rounds += 1
            state = analysis_state(engine, StudyAnalysis(engine, STUDY, root, compute=False).data.study_id)
            print(f"  worker: {state.describe() or state.status}", flush=True)
            if not state.busy:
                results["background fill"] = time.perf_counter() - fill_started
                print(f"  the worker filled the cache in {results['background fill']:.1f} s ({rounds} rounds of views)")
                break
            time.sleep(5)
    if worker is not None:
        worker.stop()
    first_session = int(StudyAnalysis(engine, STUDY, root).data.sessions["session_id"].iloc[0])
    timed("session view", lambda: researcher.show_session(STUDY, first_session), results)
    timed("report", lambda: write_report(StudyAnalysis(engine, STUDY, root, args.checkpoint), root / "report"),
          results)
    views = {k: v for k, v in results.items() if k.endswith(")") or k == "session view"}
    slowest = max(views, key=views.get)
    print(f"slowest view: {slowest} {views[slowest]:.2f} s (target 2 s); report {results['report']:.2f} s "
          "(target 30 s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

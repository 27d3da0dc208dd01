"""Researcher area speed on a large simulated study: 100 sessions of 5 minutes, 10,000 judgments.

    python benchmarks/bench_dashboard.py [--checkpoint CKPT] [--workdir DIR]

Seeds the study (analysis.demo_study: voice activity only, 50 sessions per system; 500 benchmark
pairs judged by 20 simulated annotators each), then times every view of the dashboard as its
handler runs it (a fresh StudyAnalysis per request, as in the app): first with an empty cache
(statistics, judge metrics and TurnNat computed and stored), then again from the cache; then
the session view and the full report. Targets: every view under 2 s (cached), the report under
30 s, on the 2-core machine.
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
        pairs = demo_study.seed_pairs(session, study, pairs_per_type, rng, sources=40)
        judgments = demo_study.seed_judgments(session, study, pairs, annotators, careless=2, per_pair=annotators, rng=rng)
    return {"sessions": n, "formal_pairs": len(pairs["formal"]), "judgments": judgments}


def timed(label: str, fn, results: dict):
    start = time.perf_counter()
    value = fn()
    results[label] = time.perf_counter() - start
    print(f"  {label:32s} {results[label]:7.2f} s", flush=True)
    return value


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--checkpoint", help="judge checkpoint (default: the packaged one)")
    parser.add_argument("--workdir", help="where the database and report go (default: a temporary folder)")
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=300.0)
    parser.add_argument("--pairs-per-type", type=int, default=100)
    parser.add_argument("--annotators", type=int, default=20)
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
    researcher = Researcher(engine, root, args.checkpoint)
    for phase in ("empty cache", "cached"):
        print(f"views, {phase}:")
        for key in STUDY_VIEWS:
            if key == "human":
                timed(f"{key} ({phase})", lambda: researcher.show_human(STUDY), results)
            else:
                timed(f"{key} ({phase})", lambda key=key: researcher.show(key, STUDY), results)
    first_session = int(StudyAnalysis(engine, STUDY, root).data.sessions["session_id"].iloc[0])
    timed("session view", lambda: researcher.show_session(STUDY, first_session), results)
    timed("report", lambda: write_report(StudyAnalysis(engine, STUDY, root, args.checkpoint), root / "report"),
          results)
    cached = {k: v for k, v in results.items() if k.endswith("(cached)") or k == "session view"}
    slowest = max(cached, key=cached.get)
    print(f"slowest cached view: {slowest} {cached[slowest]:.2f} s (target 2 s); report {results['report']:.2f} s "
          "(target 30 s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

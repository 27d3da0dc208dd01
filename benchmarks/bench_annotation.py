"""Many annotators at once against the running app: guarantees and latency.

    .venv/bin/python benchmarks/bench_annotation.py                    # 50 annotators, ~2 minutes
    .venv/bin/python benchmarks/bench_annotation.py --think 0 0.2      # as fast as they can (stress)
    .venv/bin/python benchmarks/bench_annotation.py --database-url postgresql://...

Starts the app (`python app.py`, uvicorn, one process) on a free port against a fresh SQLite
file (or the given database), registers a benchmark of short espeak-ng clips (150 pairs + 10
artifact controls, K=3), creates the annotators and lets them work at once through the JSON API
(annotation.simulate): they open their links within the first `--arrive-within` s (0: all in the
same instant), each spends `--think` seconds per trial, 20% send an answer twice, and
`--walk-away` of them leave after taking their first trial (those claims expire after
`--claim-timeout` s and go to the others). Then it checks the database: zero lost judgments,
zero duplicates, every pair exactly K judgments. Prints p50/p95 latency of GET next and POST
submit (target p95 <= 150 ms on the 2-core machine) and writes them as JSON with --out.

Measured 2026-11-22 on the shared 2-core machine (load average ~5 from other work; the 50 client
threads run on the same cores): 160 pairs x K=3 = 480 judgments, 0 lost, 0 duplicates, 160/160
pairs with exactly 3, 5 walked-away claims re-assigned after expiry, ~125 resubmissions stored once.

    default (think 4-10 s, arrivals within 10 s), SQLite:  next p50 21 / p95 80 ms,  submit p50 17 / p95 57 ms
    same on PostgreSQL 15:                                 next p50 28 / p95 116 ms, submit p50 21 / p95 54 ms
    --arrive-within 0 (all 50 in one instant), SQLite:     next p50 23 / p95 487 ms, submit p50 16 / p95 74 ms
    --think 0 0.2 (as fast as they can), SQLite:           next p50 118 / p95 350 ms, submit p50 130 / p95 350 ms

The instant burst queues ~150 requests (first fetch, practice done, first trial per annotator) of
~10-15 ms each; the p95 there is that queue draining in the first seconds, not steady state.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent

from annotation.assignment import AssignmentSettings
from annotation.register import register_benchmark
from annotation.simulate import Behaviour, check_judgments, run_annotators, stored_trials
from annotation.trials import create_annotators, get_study
from storage.db import init_db, make_engine, session_scope
from tests.annotation.small_benchmark import write_small_benchmark
from tests.browser import free_port

STUDY = "bench"


def start_app(database_url: str, data_root: Path, port: int) -> subprocess.Popen:
    env = {**os.environ, "TURNTAKING_DATA": str(data_root), "HF_HUB_OFFLINE": "1",
           "TURNTAKING_RESEARCHER_PASSWORD": secrets.token_urlsafe(12)}
    server = subprocess.Popen(
        [sys.executable, "app.py", "--port", str(port), "--database-url", database_url],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"the app exited: {server.stderr.read().strip()}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/", timeout=2).status_code == 200:
                return server
        except httpx.HTTPError:
            time.sleep(0.5)
    server.terminate()
    raise RuntimeError("the app did not start within 180 s")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--annotators", type=int, default=50)
    parser.add_argument("--pairs", type=int, default=150)
    parser.add_argument("--controls", type=int, default=10)
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--trials-per-annotator", type=int, default=12)
    parser.add_argument("--think", type=float, nargs=2, default=(4.0, 10.0), metavar=("MIN", "MAX"),
                        help="seconds an annotator spends on a trial (uniform)")
    parser.add_argument("--walk-away", type=int, default=5, help="annotators who leave after their first claim")
    parser.add_argument("--arrive-within", type=float, default=10.0,
                        help="annotators open their links at random moments in the first this many seconds (0: all at once)")
    parser.add_argument("--claim-timeout", type=float, default=10.0)
    parser.add_argument("--database-url", default=None, help="default: a fresh SQLite file in a temporary folder")
    parser.add_argument("--out", default=None, help="also write the results as JSON here")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="bench-annotation-") as tmp:
        tmp = Path(tmp)
        url = args.database_url or f"sqlite:///{tmp / 'app.db'}"
        engine = make_engine(url)
        init_db(engine)
        bench = write_small_benchmark(tmp / "clips", pairs=args.pairs, controls=args.controls)
        settings = AssignmentSettings(judgments_per_pair=args.k, trials_per_annotator=args.trials_per_annotator,
                                      claim_timeout_s=args.claim_timeout)
        with session_scope(engine) as session:
            register_benchmark(session, bench, STUDY, tmp / "data", settings)
            tokens = create_annotators(session, get_study(session, STUDY), args.annotators)

        port = free_port()
        server = start_app(url, tmp / "data", port)
        try:
            behaviours = (
                [Behaviour(think_s=tuple(args.think), abandon=1.0, arrive_within_s=args.arrive_within)] * args.walk_away
                + [Behaviour(think_s=tuple(args.think), resubmit=0.2, wait_poll_s=1.0, arrive_within_s=args.arrive_within)]
                * (args.annotators - args.walk_away)
            )
            result = run_annotators(f"http://127.0.0.1:{port}", tokens, behaviours, seed=0)
        finally:
            server.terminate()
            server.wait(timeout=30)

        with session_scope(engine) as session:
            check = check_judgments(session, STUDY, args.k)
            acknowledged = {trial for _, trial in result.stored}
            in_database = stored_trials(session)
        engine.dispose()

    report = {
        "annotators": args.annotators,
        "pairs": check["pairs"],
        "k": args.k,
        "think_s": list(args.think),
        "arrive_within_s": args.arrive_within,
        "database": url.split(":")[0],
        "wall_s": round(result.wall_s, 1),
        "completed": result.completed,
        "walked_away": result.abandoned,
        "resubmits": result.resubmits,
        "waits": result.waits,
        "errors": result.errors[:10],
        "lost_judgments": len(acknowledged - in_database),
        "unacknowledged_judgments": len(in_database - acknowledged),
        **check,
        "latency": result.latency(),
    }
    print(json.dumps(report, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    ok = (
        not result.errors and report["lost_judgments"] == 0 and report["unacknowledged_judgments"] == 0
        and check["duplicates"] == 0 and check["pairs_with_exactly_k"] == check["pairs"]
    )
    print("guarantees hold" if ok else "GUARANTEES VIOLATED", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

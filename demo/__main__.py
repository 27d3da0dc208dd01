"""Command line of the real demo (`make run` runs it before starting the app).

    python -m demo build [--database-url URL] [--data-root DIR]
    python -m demo readme [--readme PATH] [--database-url URL] [--data-root DIR]
    python -m demo examine [--database-url URL] [--data-root DIR] [--tasks a,b] [--per-task 2] [--seed 0]
                           [--systems NAME,...]

`build` builds the demo study's speech, clip pairs and calls (demo.build) once; later runs return
at once. `examine` runs the automatic examiner on each embedded system of the demo study and
stores the runs (demo.examination; `app.py --demo-examiner` runs it in the background); a run
stored before on the same task set is not redone. `readme` writes the built demo's pair counts
into README.md's demo block (demo.readme).
The database is --database-url, else $DATABASE_URL, else the SQLite file in the data root
(--data-root, else $TURNTAKING_DATA or ./data), as for the app.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from demo.build import DemoBuildError, build_demo, is_built, pair_counts  # noqa: E402
from demo.examination import DEMO_EXAMINER_PER_TASK, DEMO_EXAMINER_SEED, DEMO_EXAMINER_TASKS  # noqa: E402
from demo.readme import README, ReadmeError, with_pairs  # noqa: E402
from examiner.study_runs import ExaminationPlan, ExaminationStopped, examine_study  # noqa: E402
from examiner.task_sets import parse_tasks  # noqa: E402
from storage import db  # noqa: E402
from storage.demo import DEMO_STUDY, seed_demo_study  # noqa: E402
from storage.files import default_data_root  # noqa: E402
from systems import SystemError_  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m demo", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    build = commands.add_parser("build", help="build the demo study (speech, clip pairs, calls) if not built yet")
    build.add_argument("--database-url", help="default: $DATABASE_URL, else SQLite in the data root")
    build.add_argument("--data-root", help="default: $TURNTAKING_DATA or ./data")
    readme = commands.add_parser("readme", help="write the built demo's pair counts into the README's demo block")
    readme.add_argument("--readme", type=Path, default=README, help="default: the checkout's README.md")
    readme.add_argument("--database-url", help="default: $DATABASE_URL, else SQLite in the data root")
    readme.add_argument("--data-root", help="default: $TURNTAKING_DATA or ./data")
    examine = commands.add_parser("examine", help="examine the demo study's embedded systems and store the runs")
    examine.add_argument("--database-url", help="default: $DATABASE_URL, else SQLite in the data root")
    examine.add_argument("--data-root", help="default: $TURNTAKING_DATA or ./data")
    examine.add_argument("--tasks", default=",".join(DEMO_EXAMINER_TASKS), help="'all' or a comma list of tasks")
    examine.add_argument("--per-task", type=int, default=DEMO_EXAMINER_PER_TASK, help="examples per task")
    examine.add_argument("--seed", type=int, default=DEMO_EXAMINER_SEED)
    examine.add_argument("--systems", help="a comma list of the demo's system names (default: every embedded one)")
    examine.add_argument("--nice", type=int, default=0, help="lower this process's CPU priority by N")
    examine.add_argument("--parent-pid", type=int, help="stop after the current call once this process is gone")
    args = parser.parse_args(argv)

    data_root = Path(args.data_root) if args.data_root else default_data_root()
    url = args.database_url or os.environ.get("DATABASE_URL") or \
        f"sqlite:///{(data_root / db.DATABASE_FILENAME).resolve()}"
    try:
        engine = db.make_engine(url)
        db.init_db(engine)
        if args.command == "readme":
            return write_readme(engine, args.readme)
        if args.command == "examine":
            with db.session_scope(engine) as session:
                seed_demo_study(session)  # as the app's start-up does
            engine.dispose()
            return examine_demo(url, data_root, args)
        summary = build_demo(engine, url, data_root)
    except (DemoBuildError, SystemError_, db.DatabaseError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(summary))
    return 0


def examine_demo(url: str, data_root: Path, args) -> int:
    """`examine`: 0 when every system's run is stored, 1 when one failed (the lines say why)."""
    if args.per_task < 1:
        raise ValueError(f"--per-task must be at least 1, got {args.per_task}")
    systems = tuple(s.strip() for s in args.systems.split(",") if s.strip()) if args.systems else None
    plan = ExaminationPlan(DEMO_STUDY, parse_tasks(args.tasks), args.per_task, args.seed, systems)
    if args.nice:
        os.nice(args.nice)
    # The converted models where the demo build's calls found them (systems.models)
    os.environ["TURNTAKING_DATA"] = str(data_root)
    stop = threading.Event()
    if args.parent_pid is not None:
        threading.Thread(target=_stop_when_gone, args=(args.parent_pid, stop), daemon=True).start()
    try:
        progress = examine_study(url, data_root, plan, stop)
    except ExaminationStopped:
        print("stopped: the server is gone; the next start goes on from the last finished call", file=sys.stderr)
        return 1
    print("\n".join(progress.describe()))
    return 1 if progress.state == "failed" or any(s.state == "failed" for s in progress.systems) else 0


def _stop_when_gone(parent_pid: int, stop: threading.Event) -> None:
    while os.getppid() == parent_pid and not stop.wait(1.0):
        pass
    stop.set()


def write_readme(engine, readme: Path) -> int:
    if not is_built(engine):
        print("error: the demo is not built in this database: run `python -m demo build` first", file=sys.stderr)
        return 1
    try:
        readme.write_text(with_pairs(readme.read_text(), pair_counts(engine)))
    except (OSError, ReadmeError) as exc:
        print(f"error: {readme}: {exc}", file=sys.stderr)
        return 1
    print(f"wrote the demo's pair counts into {readme}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

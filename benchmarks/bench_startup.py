"""Start-up cost of each command line: the CPU seconds a fresh Python process spends importing
`app` or a package's `__main__` (what every CLI call, app worker and analysis worker pays before
it does anything), the least of several runs.

    .venv/bin/python benchmarks/bench_startup.py [--runs 3]

Why it matters: the test suite starts about a hundred such processes, and a researcher's scripts
call the CLIs in loops. Libraries that only some commands need (scipy.stats and scipy.signal,
scikit-learn's metrics, choix, alembic) are imported where they are used.

28 Nov 2026, the 2-core machine, least of 3, the commit before the deferred imports (4fb5d6e)
and after, run one after the other: app 3.32 -> 1.37 s, analysis 2.78 -> 1.32, annotation
1.86 -> 1.09, demo 3.26 -> 1.56, examiner 2.20 -> 0.96, judge 4.77 -> 2.66 (torch),
naturalness 2.74 -> 0.97, predictorbench 2.62 -> 1.19, storage 0.89 -> 0.78, studies 2.13 -> 0.87.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODULES = ("app", "analysis.__main__", "annotation.__main__", "demo.__main__", "examiner.__main__",
           "judge.__main__", "naturalness.__main__", "predictorbench.__main__", "storage.__main__",
           "studies.__main__")


def startup_cpu_s(module: str) -> float:
    """User + system CPU seconds of `python -c "import MODULE"` in a fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", f"import {module}"], cwd=ROOT, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="runs per module; the least is reported")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error(f"--runs must be at least 1, got {args.runs}")
    print(f"{'module':26s} start-up CPU s (least of {args.runs})")
    for module in MODULES:
        print(f"{module:26s} {min(startup_cpu_s(module) for _ in range(args.runs)):.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

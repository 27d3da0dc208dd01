"""Where the suite's time goes, file by file: wall seconds and CPU seconds (the test process's own,
and its finished child processes': the app servers, CLIs and browsers a test starts).

    python -m pytest -p tests.time_profile -n 3 --dist loadfile -m "not alone and not measurement" tests
    python -m tests.time_profile [DIR]

The plugin writes one JSON file per pytest process into $TURNTAKING_TEST_PROFILE (default
/tmp/turntaking-test-profile, emptied by the controlling process at the start); the command prints
the files by CPU seconds, with the totals, then the whole machine's busy CPU seconds over the run.
A file whose wall time far exceeds its CPU time waits (real-time calls, timeouts, servers starting
beside other tests) or starts processes its own figures miss; the machine's line says which: on
2 cores, 4 workers' files summed 798 CPU s in a 545 s run, 6 workers' 875 CPU s in 593 s (more workers,
a longer run: the load average was 8.5, the cores saturated by what the files' figures miss).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest

DEFAULT_DIR = "/tmp/turntaking-test-profile"
_rows: list[dict] = []


def _folder() -> Path:
    return Path(os.environ.get("TURNTAKING_TEST_PROFILE", DEFAULT_DIR))


def _cpu_s() -> tuple[float, float]:
    """(this process's, its waited-for children's) user + system CPU seconds."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


MACHINE_FILE = "machine.json"  # the whole machine's CPU over the run, written by the controlling process
_machine_at_start: tuple[float, float] | None = None


def _machine_busy_cpu_s() -> float:
    """CPU seconds the machine's cores have spent busy since boot (/proc/stat): what every process
    used, including those the per-test figures cannot see (browsers whose parent is never waited
    for, servers killed rather than reaped)."""
    fields = [float(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0.0)  # idle and iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def pytest_configure(config):
    global _machine_at_start
    if not hasattr(config, "workerinput"):  # the controlling process (or a run without workers)
        shutil.rmtree(_folder(), ignore_errors=True)
        _folder().mkdir(parents=True)
        _machine_at_start = (time.monotonic(), _machine_busy_cpu_s())


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    (own, children), started = _cpu_s(), time.monotonic()
    try:
        return (yield)
    finally:
        own_after, children_after = _cpu_s()
        _rows.append({"test": item.nodeid, "wall_s": time.monotonic() - started,
                      "cpu_s": own_after - own, "children_cpu_s": children_after - children})


def pytest_sessionfinish(session):
    if _rows:
        # from the worker's own config, not the environment a pytest started inside a test inherits
        worker = getattr(session.config, "workerinput", {}).get("workerid", "main")
        (_folder() / f"{worker}-{os.getpid()}.json").write_text(json.dumps(_rows))
    if _machine_at_start is not None:
        started, busy = _machine_at_start
        (_folder() / MACHINE_FILE).write_text(json.dumps({
            "wall_s": time.monotonic() - started, "busy_cpu_s": _machine_busy_cpu_s() - busy,
            "cores": os.cpu_count()}))


def by_file(folder: Path) -> dict[str, dict[str, float]]:
    """file -> {"wall_s", "cpu_s", "tests"} summed over the profile's tests."""
    files: dict[str, dict[str, float]] = defaultdict(lambda: {"wall_s": 0.0, "cpu_s": 0.0, "tests": 0})
    for path in sorted(folder.glob("*.json")):
        if path.name == MACHINE_FILE:
            continue
        for row in json.loads(path.read_text()):
            totals = files[row["test"].split("::")[0]]
            totals["wall_s"] += row["wall_s"]
            totals["cpu_s"] += row["cpu_s"] + row["children_cpu_s"]
            totals["tests"] += 1
    return dict(files)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.time_profile", description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", nargs="?", type=Path, default=_folder())
    parser.add_argument("--top", type=int, default=30, help="files shown (default 30)")
    args = parser.parse_args(argv)
    files = by_file(args.folder)
    if not files:
        print(f"error: no profile in {args.folder} (run pytest with -p tests.time_profile)", file=sys.stderr)
        return 2
    ranked = sorted(files.items(), key=lambda item: -item[1]["cpu_s"])
    print(f"{'CPU s':>8} {'wall s':>8} {'tests':>5}  file")
    for name, totals in ranked[:args.top]:
        print(f"{totals['cpu_s']:8.1f} {totals['wall_s']:8.1f} {totals['tests']:5d}  {name}")
    print(f"{sum(t['cpu_s'] for t in files.values()):8.1f} {sum(t['wall_s'] for t in files.values()):8.1f} "
          f"{sum(t['tests'] for t in files.values()):5d}  all {len(files)} files")
    machine = args.folder / MACHINE_FILE
    if machine.is_file():
        m = json.loads(machine.read_text())
        print(f"the machine: {m['busy_cpu_s']:.0f} CPU s busy in {m['wall_s']:.0f} s "
              f"({100 * m['busy_cpu_s'] / m['wall_s']:.0f} % of one core; {m['cores']} cores)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

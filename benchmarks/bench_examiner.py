"""The examiner's table for every embedded dialogue system, from one command, with the time it
takes per example on this machine.

    .venv/bin/python benchmarks/bench_examiner.py --out RUNS [--per-task 2] [--seed 0]

One task set (`python -m examiner make-tasks`, in RUNS/set) is run against each embedded kind of
`systems/kinds.py` (`python -m examiner run`, in RUNS/<kind>; resumable: a second call
only scores). Prints FDB's columns next to the published v1.0 rows, the overlap probes, the load
average (the calls run in real time; a busy machine slows every model) and per system the audio
played, the calls' wall time and the scoring time per example.

Measured on the 2-core machine (24 Nov 2026, otherwise idle, load 0.7): `--per-task 2 --seed 0`,
14 calls per system, 17.4 s (cascaded) and 17.1 s (cascade-backchannel) of wall time per example,
scoring 0.70 s and 0.66 s per example; the table is in examiner/README.md.
25 Nov 2026, `--per-task 4 --seed 1` (28 calls per system, idle): 17.7 s, 17.3 s and 17.5 s
(predictive) of wall time per example (the calls run in real time: 494.6, 482.5 and 488.5 s of
audio), scoring 0.37-0.38 s per example (the Switchboard backchannel comparison included), no
late blocks; the table is in examiner/README.md ("the three embedded systems, final versions").
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from examiner.runs import run_system
from examiner.table import PUBLISHED_FDB_V1
from examiner.task_sets import TASK_NAMES, make_task_set
from systems.kinds import KINDS

COLUMNS = ("pause_tor", "backchannel_tor", "backchannel_frequency_per_s", "backchannel_jsd", "smooth_tor",
           "smooth_latency_s", "interruption_tor", "interruption_latency_s")
PROBES = ("barge_in_stopped", "barge_in_stop_time_s", "false_barge_in_backchannel", "false_barge_in_background",
          "false_barge_in_noise", "backchannel_rate_ratio_switchboard", "backchannel_timing_jsd_switchboard")


def cell(value) -> str:
    return "-" if value is None else f"{value:.3f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--per-task", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    out = Path(args.out)
    if not (out / "set" / "manifest.json").exists():
        make_task_set(out / "set", TASK_NAMES, args.per_task, args.seed)
    reports = {kind.name: run_system(out / kind.name, kind.name, {}, TASK_NAMES, out / "set")
               for kind in KINDS if kind.embedded}
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; task set {out / 'set'} "
          f"(seed {args.seed}, {args.per_task} per task)\n")
    print("| system | " + " | ".join(COLUMNS) + " |")
    print("|---" * (len(COLUMNS) + 1) + "|")
    for name, report in reports.items():
        print(f"| {name} (examiner) | " + " | ".join(cell(report["table"][c]) for c in COLUMNS) + " |")
    for name, row in PUBLISHED_FDB_V1.items():
        print(f"| {name} (FDB v1.0, published) | " + " | ".join(cell(row[c]) for c in COLUMNS) + " |")
    print("\n| system | " + " | ".join(PROBES) + " | calls | audio s | call wall s / example | score s / example | late blocks |")
    print("|---" * (len(PROBES) + 6) + "|")
    for name, report in reports.items():
        n = report["calls"]
        print(f"| {name} | " + " | ".join(cell(report["table"][c]) for c in PROBES)
              + f" | {n} | {report['audio_s']:.1f} | {report['call_wall_s'] / n:.1f} | {report['score_wall_s'] / n:.2f} "
              f"| {report['late_blocks']} |")
    (out / "table.json").write_text(json.dumps({k: r["table"] for k, r in reports.items()}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

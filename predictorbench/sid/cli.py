"""`python -m predictorbench sid run | metrics` (registered by predictorbench/__main__.py).

    run --root SID_BENCH_DIR [--split en zh silence_noise] [--detector vad|cascade|module:attr] --out-dir DIR
    metrics --annotations FILE... --predictions FILE... [--tolerance 0.05] [--early-penalty absolute|false_alarm] [--json]
"""

from __future__ import annotations

import json

from turntaking.commands import guard
from predictorbench.sid.data import (
    SidDataError,
    load_annotations,
    load_benchmark,
    load_predictions,
)
from predictorbench.sid.metrics import report
from predictorbench.sid.run import load_detector, run


def cmd_run(args) -> int:
    manifest = run(load_detector(args.detector), load_benchmark(args.root, args.split), args.out_dir)
    for path in manifest["predictions"].values():
        print(path)
    return 0


def cmd_metrics(args) -> int:
    splits = {}
    for path in args.annotations:
        clips = load_annotations(path)
        splits[clips[0].split if clips else path] = clips
    result = report(splits, load_predictions(args.predictions), args.tolerance, args.early_penalty)
    if args.json:
        print(json.dumps(result, indent=1))
        return 0

    def fmt(v, pct=False):
        return "n/a" if v is None else (f"{100 * v:.1f}%" if pct else f"{v:.3f} s")

    for name, r in [("overall", result), *result["per_split"].items()]:
        print(f"{name:14s} clips {r['clips']:5d}  FIR {fmt(r['FIR'], True):>7s}  IRL {fmt(r['IRL']):>8s}  "
              f"APT {fmt(r['APT']):>8s}  {r['outcomes']}")
    return 0


def _guard(func):
    return guard(func, (SidDataError, ValueError, FileNotFoundError, OSError, ImportError, AttributeError))


def register(subparsers) -> None:
    sid = subparsers.add_parser("sid", help="semantic interruption detection benchmark (SID-bench)")
    sub = sid.add_subparsers(dest="sid_command", required=True)

    p = sub.add_parser("run", help="run a break detector over SID-bench clips and write predictions")
    p.add_argument("--root", required=True, help="SID-bench folder (holding test_wavs/ or the JSONL files)")
    p.add_argument("--split", nargs="+", choices=("en", "zh", "silence_noise"), help="default: all present")
    p.add_argument("--detector", default="vad", help="vad, cascade, or module:attribute")
    p.add_argument("--out-dir", required=True)
    p.set_defaults(func=_guard(cmd_run))

    p = sub.add_parser("metrics", help="FIR, IRL and APT overall and per annotation file")
    p.add_argument("--annotations", nargs="+", required=True, help="SID-bench annotation JSONL file(s)")
    p.add_argument("--predictions", nargs="+", required=True, help="prediction JSONL file(s)")
    p.add_argument("--tolerance", type=float, default=0.05, help="seconds (SID-bench: 0.05)")
    p.add_argument("--early-penalty", choices=("absolute", "false_alarm"), default="absolute",
                   help="penalty of a detection more than the tolerance before the break (see predictorbench/sid/metrics.py)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_guard(cmd_metrics))

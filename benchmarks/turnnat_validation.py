"""Development-time check of TurnNat: pairwise accuracy on perturbed Switchboard VALIDATION clips.

    .venv/bin/python benchmarks/turnnat_validation.py [--swb /tmp/swb] [--per-type 40] [--seed 0]
                                                      [--out /tmp/turnnat_val] [--checkpoint PATH]

1. `python -m annotation build-pairs SWB --split val`: 20-25 s voice-activity clips of validation
   conversations and their TurnNat perturbations (early entry, late response, hold instead of
   shift, shift instead of hold, excessive backchannel; annotation/perturbations.py), written as
   voice-activity JSON with a JSONL manifest.
2. `python -m judge pairs MANIFEST --json`: DeltaNLL per pair, pairwise accuracy overall and per
   type, C-index, Wilson intervals.
The judge was trained on the train split only, so these clips are unseen. Target: pairwise
accuracy >= 85 %. The summary is printed and the full report saved as OUT/pairs_report.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(args: list[str]) -> str:
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    result = subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"failed: {' '.join(args)}\n{result.stderr}")
    return result.stdout


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--swb", default="/tmp/swb")
    ap.add_argument("--split", default="val")
    ap.add_argument("--per-type", type=int, default=40)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="/tmp/turnnat_val")
    ap.add_argument("--checkpoint")
    args = ap.parse_args(argv)

    out = Path(args.out)
    manifest = out / "manifest.jsonl"
    if not manifest.is_file():
        print(run(["-m", "annotation", "build-pairs", args.swb, "--split", args.split, "--out", str(out),
                   "--per-type", str(args.per_type), "--seed", str(args.seed)]).strip())
    pairs_args = ["-m", "judge", "pairs", str(manifest), "--json"]
    if args.checkpoint:
        pairs_args += ["--checkpoint", args.checkpoint]
    report = json.loads(run(pairs_args))
    (out / "pairs_report.json").write_text(json.dumps(report, indent=1))

    def line(name: str, s: dict) -> str:
        a, c = s["pair_accuracy"], s["c_index"]
        low, high = a["wilson_95"]
        return (f"{name:24s} {s['pairs']:5d}  {100 * a['value']:5.1f}%  [{100 * low:5.1f}, {100 * high:5.1f}]"
                f"  {c['value']:.3f}  {s['mean_delta_nll']:+.4f}")

    print(f"{'type':24s} {'pairs':>5s}  {'acc':>6s}  {'Wilson 95%':>14s}  {'C-idx':>5s}  {'mean dNLL':>8s}")
    print(line("all", report))
    for t, s in report["per_type"].items():
        print(line(t, s))
    verdict = "meets" if report["pair_accuracy"]["value"] >= 0.85 else "BELOW"
    print(f"pairwise accuracy {100 * report['pair_accuracy']['value']:.1f}% {verdict} the 85% target; "
          f"report: {out / 'pairs_report.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

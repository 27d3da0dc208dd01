"""Development-time check of the naturalness scorers: pair accuracy on perturbed Switchboard clips.

    .venv/bin/python benchmarks/turnnat_validation.py [--swb /tmp/swb] [--split val] [--per-type 80]
                                                      [--seed 0] [--out /tmp/turnnat_val]
                                                      [--scorers timing-hazard durations turnnat-paper]

1. `python -m annotation build-pairs SWB --split val --hold-removal mute`: 20-25 s voice-activity
   clips of validation conversations and their TurnNat perturbations (early entry, late response,
   hold instead of shift, shift instead of hold, excessive backchannel; annotation/perturbations.py),
   written as voice-activity JSON with a JSONL manifest. Hold instead of shift silences the answer
   and keeps the timeline (a missing answer: the speaker waits, then goes on).
2. The same with `--hold-removal excise` (the answer cut out and the gap compacted to 0.5-1.5 s, so
   the speaker merely pauses and goes on; the other four types are the same pairs): its hold row is
   reported apart, as what voice activity alone cannot be expected to catch.
3. `python -m naturalness pairs MANIFEST --scorer NAME --json` for every scorer: DeltaNLL per pair,
   pairwise accuracy overall and per type with 95 % intervals over source conversations, C-index.
Every scorer's model was fitted (timing-hazard, durations) or trained (turnnat-paper) on the
train split only, and timing-hazard's one free parameter (flip cost) was chosen on pairs of
*training* conversations (`--split train --seed 1`), so the validation clips are unseen.
Targets for the default scorer: pair accuracy >= 96 %, every type >= 88 %, C-index >= 0.75.
The tables are printed and each report saved as OUT/pairs_report.SCORER.json.
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
    ap.add_argument("--per-type", type=int, default=80)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="/tmp/turnnat_val")
    ap.add_argument("--scorers", nargs="+", default=["timing-hazard", "durations", "turnnat-paper"])
    args = ap.parse_args(argv)

    out = Path(args.out)
    reports, excised = {}, {}
    for removal, into in (("mute", reports), ("excise", excised)):
        folder = out / f"hold-{removal}"
        manifest = folder / "manifest.jsonl"
        if not manifest.is_file():
            print(run(["-m", "annotation", "build-pairs", args.swb, "--split", args.split, "--out", str(folder),
                       "--per-type", str(args.per_type), "--seed", str(args.seed),
                       "--hold-removal", removal]).strip())
        for scorer in args.scorers:
            into[scorer] = json.loads(run(["-m", "naturalness", "pairs", str(manifest), "--scorer", scorer, "--json"]))
            (folder / f"pairs_report.{scorer}.json").write_text(json.dumps(into[scorer], indent=1))

    def cell(s: dict) -> str:
        a = s["pair_accuracy"]
        if a["interval_95"] is None:
            return f"{100 * a['value']:5.1f}% [  n/a ]"
        low, high = a["interval_95"]
        return f"{100 * a['value']:5.1f}% [{100 * low:4.1f}, {100 * high:5.1f}]"

    first = next(iter(reports.values()))
    rows = [("all", {k: r for k, r in reports.items()})]
    rows += [(t, {k: r["per_type"][t] for k, r in reports.items()}) for t in first["per_type"]]
    print(f"{'type':24s} {'pairs':>5s}  " + "  ".join(f"{k:>22s}" for k in reports))
    for name, by_scorer in rows:
        print(f"{name:24s} {next(iter(by_scorer.values()))['pairs']:5d}  "
              + "  ".join(f"{cell(s):>22s}" for s in by_scorer.values()))
    print(f"{'C-index':24s} {'':5s}  " + "  ".join(f"{r['c_index']['value']:22.3f}" for r in reports.values()))
    hold = {k: r["per_type"]["hold_instead_of_shift"] for k, r in excised.items()}
    print(f"{'hold, answer excised':24s} {next(iter(hold.values()))['pairs']:5d}  "
          + "  ".join(f"{cell(s):>22s}" for s in hold.values()))
    default = reports[args.scorers[0]]
    worst = min(s["pair_accuracy"]["value"] for s in default["per_type"].values())
    print(f"{args.scorers[0]}: pair accuracy {100 * default['pair_accuracy']['value']:.1f}% (target >= 96%), "
          f"worst type {100 * worst:.1f}% (target >= 88%), C-index {default['c_index']['value']:.3f} "
          f"(target >= 0.75); reports in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

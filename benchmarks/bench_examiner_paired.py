"""A baseline commit and the working tree examined side by side, in one sitting, on one task set:
each block of examples is played to both versions one after the other (the baseline first on
even blocks, the working tree first on odd ones, so that a machine growing busier weighs on both),
then `python -m examiner compare` pairs them example by example. Examples go in blocks of
`--block` (each version's process loads its models once a block: about 15 s).

    PYTHONPATH=. HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/bench_examiner_paired.py --baseline HEAD~1 \\
        --system predictive --tasks smooth_turn_taking,pause_handling --per-task 24 --voices choosing \\
        --questions choosing --out /tmp/paired

On the test set (`--voices test` or `--questions test`: examiner/test_set.py) it runs only with
`--final` (and `--again REASON` for a system kind already run there), and the working tree's
figures and the comparison go into the test set's ledger once, at the end.

The baseline is checked out with `git worktree` (the same virtualenv, the same models, the same
data root); each version's calls run in a process of its own, from its own tree. How many
examples a task needs: the comparison prints the spread of the paired latency differences and
the examples a 0.1 s change needs at that spread (examiner/paired_runs.py).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tqdm import tqdm

from examiner.test_set import LEDGER_ENV, TestSetError, check_test_run, is_test_set, record_test_run
from systems.kinds import system_kind

ROOT = Path(__file__).resolve().parents[1]


def examine(tree: Path, out: Path, args, tasks: str, example_set: Path, test_set: bool = False) -> None:
    """One version's `examiner run` on `example_set`, from its own tree (resuming into `out`). On the
    test set, a version that keeps its ledger writes its blocks into a scratch one (the real
    ledger gets the comparison once, at the end)."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    final = []
    if test_set and (tree / "examiner" / "test_set.py").exists():
        env[LEDGER_ENV] = str(out.parent / "blocks-ledger.jsonl")
        final = ["--final", "--again", "a block of a paired comparison"]
    done = subprocess.run([sys.executable, "-m", "examiner", "run", "--system", args.system, "--config", args.config,
                           "--tasks", tasks, "--set", str(example_set), "--out", str(out), *final],
                          cwd=tree, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{tree}: examiner run failed: {done.stderr.strip().splitlines()[-1:]}")


def block_set(task_set: Path, block: list[tuple[str, str]], into: Path) -> Path:
    """A task set of a block of (task, example) (the manifest kept): each version plays it in turn."""
    shutil.rmtree(into, ignore_errors=True)
    into.mkdir(parents=True)
    shutil.copy(task_set / "manifest.json", into / "manifest.json")
    for task, example in block:
        shutil.copytree(task_set / task / example, into / task / example)
    return into


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", required=True, help="the commit to compare against (e.g. HEAD~1)")
    parser.add_argument("--system", default="predictive")
    parser.add_argument("--config", default="{}")
    parser.add_argument("--tasks", default="smooth_turn_taking,pause_handling")
    parser.add_argument("--per-task", type=int, default=24)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--voices", default="choosing")
    parser.add_argument("--questions", default="choosing", help="smooth turn-taking's questions: a named set or a file (make-tasks --questions)")
    parser.add_argument("--late-s", type=float, default=0.6)
    parser.add_argument("--block", type=int, default=6, help="examples a version plays before the other (default 6)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--final", action="store_true", help="the settings are final: the test set may run")
    parser.add_argument("--again", metavar="REASON", help="the test set again for this system kind, and why")
    args = parser.parse_args()
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    baseline = out / "baseline-tree"
    if not baseline.exists():
        subprocess.run(["git", "worktree", "add", "--detach", str(baseline), args.baseline], cwd=ROOT, check=True)
    task_set = out / "set"
    if not task_set.exists():
        make = [sys.executable, "-m", "examiner", "make-tasks", str(task_set), "--tasks", args.tasks,
                "--per-task", str(args.per_task), "--seed", str(args.seed), "--voices", args.voices]
        subprocess.run(make + (["--questions", args.questions] if args.questions else []), cwd=ROOT, check=True)
    manifest = json.loads((task_set / "manifest.json").read_text())
    test_set = is_test_set(manifest)
    kind = system_kind(args.system).name
    try:
        check_test_run(manifest, kind, args.final, args.again)  # before any call
    except TestSetError as err:
        subprocess.run(["git", "worktree", "remove", "--force", str(baseline)], cwd=ROOT, check=False)
        raise SystemExit(f"error: {err}") from None
    examples = [(task, folder.name) for task in args.tasks.split(",")
                for folder in sorted((task_set / task).iterdir(), key=lambda p: int(p.name)) if folder.is_dir()]
    runs = {"baseline": (baseline, out / "run-baseline"), "working tree": (ROOT, out / "run-working-tree")}
    blocks = [examples[i:i + args.block] for i in range(0, len(examples), args.block)]
    for k, block in enumerate(tqdm(blocks, desc=f"blocks of {args.block} examples, both versions", unit="block")):
        tasks = ",".join(dict.fromkeys(task for task, _ in block))
        played = block_set(task_set, block, out / "block")
        order = list(runs.values()) if k % 2 == 0 else list(runs.values())[::-1]
        for tree, run in order:
            if not all((run / task / example / "call.json").exists() for task, example in block):
                examine(tree, run, args, tasks, played, test_set)
    for tree, run in runs.values():  # every example scored together, against the whole set
        examine(tree, run, args, args.tasks, task_set, test_set)
    done = subprocess.run([sys.executable, "-m", "examiner", "compare", str(runs["baseline"][1]),
                           str(runs["working tree"][1]), "--late-s", str(args.late_s)], cwd=ROOT,
                          capture_output=True, text=True)
    print(done.stdout or done.stderr)
    report = subprocess.run([sys.executable, "-m", "examiner", "compare", str(runs["baseline"][1]),
                             str(runs["working tree"][1]), "--late-s", str(args.late_s), "--json"], cwd=ROOT,
                            capture_output=True, text=True).stdout
    (out / "comparison.json").write_text(report)
    if test_set:
        scores = json.loads((runs["working tree"][1] / "scores.json").read_text())
        entry = record_test_run(scores, manifest, args.again, extra={
            "paired_against": args.baseline, "comparison": json.loads(report)})
        print(f"recorded in the test set's ledger: {entry['commit']}")
    # the checkout is not left registered in the repository (a rerun with the same --out adds it again)
    subprocess.run(["git", "worktree", "remove", "--force", str(baseline)], cwd=ROOT, check=False)
    print(f"baseline {args.baseline} against the working tree; report in {out / 'comparison.json'}")
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())

"""Command line of the turn-taking judges.

    python -m judge train --corpus switchboard DIR --out CKPT [--inputs va|words] [--tbu-weight ALPHA] [--epochs N] ...
    python -m judge evaluate [--checkpoint CKPT] --corpus switchboard DIR [--split-list FILE] [--json]
    python -m judge metrics | naturalness | pairs | tune ...   (judge/scoring_cli.py)
    python -m judge eot predict | metrics | compare ...          (judge/eot/cli.py)
    python -m judge sid run | metrics ...                         (judge/sid/cli.py)
    python -m judge testbeds build | evaluate | topline | prompts (judge/testbeds_cli.py)
    python -m judge fit-scorers SWITCHBOARD_DIR                   (judge/timing_cli.py)
"""

from __future__ import annotations

import argparse
import json
import sys

from judge import scoring_cli, testbeds_cli, timing_cli
from judge.eot import cli as eot_cli
from judge.evaluation import EvaluationError, evaluate
from judge.labels import LABELS
from judge.model import CheckpointError
from judge.sid import cli as sid_cli
from judge.training import TrainingError, train
from turntaking.events import add_event_options, event_params_from_options


def cmd_train(args) -> int:
    corpus, root = args.corpus
    options = {
        "epochs": args.epochs,
        "window_s": args.window_s,
        "batch_size": args.batch_size,
        "windows_per_epoch": args.windows_per_epoch,
        "learning_rate": args.learning_rate,
        "hidden_size": args.hidden_size,
        "label_weighting": args.label_weighting,
        "threads": args.threads,
        "seed": args.seed,
        "max_conversations": args.max_conversations,
        "inputs": args.inputs,
        "vocabulary_size": args.vocabulary_size,
        "word_dim": args.word_dim,
        "events": event_params_from_options(args),
    }
    manifest = train(
        root, args.out, tbu_weight=args.tbu_weight, corpus=corpus, train_list=args.train_list,
        val_list=args.val_list, cache_dir=args.cache_dir, log=lambda m: print(m, file=sys.stderr), **options,
    )
    print(f"wrote {args.out} (best epoch {manifest['best_epoch']}, val loss "
          f"{manifest['validation']['val_loss']:.4f}, sha256 {manifest['checkpoint_sha256'][:16]}...)")
    return 0


def format_evaluation(result: dict) -> str:
    rows = [f"{'':10}{'ROC-AUC':>9}{'F1':>9}"]
    for name in (*LABELS, "overall"):
        rows.append(f"{name:10}{100 * result['roc_auc'][name]:9.1f}{100 * result['f1'][name]:9.1f}")
    rows.append(f"future-activity NLL {result['future_activity_nll']:.4f} nats/frame "
                f"(TBU frames {result['future_activity_nll_tbu']:.4f})")
    return f"{result['n_conversations']} conversations, {result['n_chunks']} chunks\n" + "\n".join(rows)


def cmd_evaluate(args) -> int:
    corpus, root = args.corpus
    result = evaluate(args.checkpoint, root, args.split_list, corpus=corpus, max_conversations=args.max_conversations)
    print(json.dumps(result, indent=1) if args.json else format_evaluation(result))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m judge", description="Turn-taking judges")
    sub = parser.add_subparsers(dest="command", required=True)

    t = sub.add_parser("train", help="train a judge (voice activity, or voice activity + words) on a corpus")
    t.add_argument("--corpus", nargs=2, metavar=("NAME", "DIR"), required=True, help="e.g. switchboard /data/swb")
    t.add_argument("--out", required=True, help="checkpoint file to write (.pt); manifest and card go next to it")
    t.add_argument("--inputs", choices=("va", "words"), default="va",
                   help="va: voice activity only; words: also each speaker's most recent completed word")
    t.add_argument("--vocabulary-size", type=int, default=1000,
                   help="words: the N most frequent training words get their own embedding")
    t.add_argument("--word-dim", type=int, default=16, help="words: embedding size")
    t.add_argument("--tbu-weight", type=float, default=1.0, help="alpha: future-activity loss weight inside TBUs")
    t.add_argument("--train-list", help="conversation list (default DIR/splits/train.txt)")
    t.add_argument("--val-list", help="validation list for model selection (default DIR/splits/val.txt)")
    t.add_argument("--epochs", type=int, default=6)
    t.add_argument("--window-s", type=float, default=20.0)
    t.add_argument("--batch-size", type=int, default=64)
    t.add_argument("--windows-per-epoch", type=int, default=0, help="random sample per epoch (0 = all)")
    t.add_argument("--learning-rate", type=float, default=2e-3)
    t.add_argument("--hidden-size", type=int, default=64)
    t.add_argument("--label-weighting", choices=("balanced", "sqrt", "none"), default="balanced")
    t.add_argument("--threads", type=int, default=1)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--max-conversations", type=int, default=0, help="use only the first N of each list")
    t.add_argument("--cache-dir", default="/tmp/judge_cache", help="where prepared arrays are cached")
    add_event_options(t)
    t.set_defaults(func=cmd_train)

    e = sub.add_parser("evaluate", help="ROC-AUC / F1 per label and future-activity NLL")
    e.add_argument("--checkpoint", help="judge checkpoint (default: the packaged one)")
    e.add_argument("--corpus", nargs=2, metavar=("NAME", "DIR"), required=True)
    e.add_argument("--split-list", help="conversation list (default DIR/splits/val.txt)")
    e.add_argument("--max-conversations", type=int, default=0)
    e.add_argument("--json", action="store_true")
    e.set_defaults(func=cmd_evaluate)

    scoring_cli.register(sub)
    eot_cli.register(sub)
    sid_cli.register(sub)
    testbeds_cli.register(sub)
    timing_cli.register(sub)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        result = args.func(args)
    except (TrainingError, EvaluationError, CheckpointError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return result if isinstance(result, int) else 0


if __name__ == "__main__":
    sys.exit(main())

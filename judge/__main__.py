"""Command line of the Talking Turns judge.

    python -m judge train --corpus switchboard DIR --out CKPT [--inputs va|words] [--tbu-weight ALPHA] [--epochs N] ...
    python -m judge evaluate [--checkpoint CKPT] --corpus switchboard DIR [--split-list FILE] [--json]
    python -m judge metrics RECORDING... --system-channel N   the five Talking Turns metrics of a dialogue system
    python -m judge metrics SWITCHBOARD_DIR [--split val] [--half reference]
                                        the human reference (each speaker in the system role), on the
                                        half of the validation conversations the thresholds were not tuned on
    python -m judge metrics DIR|MANIFEST|RECORDING... --run-dir RUN [--workers N | --ray-address A]
                                        the same as Ray tasks, resumable (judge/corpus_run.py)
    python -m judge tune SWITCHBOARD_DIR [--split val] [--half tuning]
                                        thresholds tuned on human-human data (the tuning half), written next
                                        to the checkpoint (CHECKPOINT.thresholds.json) with the conversations used
    python -m judge fit-turn-end SWITCHBOARD_DIR --out judge/checkpoints/turn_end.json [--conversations N]
                                        the turn-end model of a predictive system (judge/turn_end.py), fitted
                                        on the training split, written with its manifest
    python -m judge evaluate-turn-end SWITCHBOARD_DIR [--model PATH] [--conversations N] [--json]
                                        its ROC-AUC and decision rules on the validation split
RECORDING: a two-channel audio file (one speaker per channel) or a voice-activity JSON. Bad input of
metrics and tune ends with one line `error: ...` on stderr and exit status 2. Naturalness and the
predictor benchmarks have their own: `python -m naturalness`, `python -m predictorbench`.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from tqdm import tqdm

from jobs.ray_runs import add_ray_options, check_ray_options
from judge.corpus_run import metrics_run
from judge.evaluation import EvaluationError, evaluate
from judge.labels import LABELS
from judge.model import CheckpointError, load_checkpoint
from judge.reports import (
    checkpoint_path,
    human_reference_report,
    load_judge,
    metrics_report,
    switchboard_ids,
    tune_report,
)
from judge.questions import QuestionModelError, dialog_act_units, has_dialog_acts, question_roc_auc
from judge.thresholds import HALF_RULE, HALVES, LABEL_NAMES, save_thresholds, thresholds_path
from judge.training import TrainingError, train
from judge.turn_end import TurnEndError, load_turn_end_model, save_turn_end_model, utterance_tokens
from judge.turn_end_fitting import fit_turn_end_model, switchboard_silences
from judge.turn_end_evaluation import evaluate_silences, format_evaluation as format_turn_end_evaluation
from speech.cpus import torch_threads
from turntaking.commands import report_command
from turntaking.events import add_event_options, event_params_from_options
from turntaking.switchboard import CorpusError, conversation_ids

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


def _pct(v) -> str:
    return "  n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:5.1f}"


def _interval(iv, scale: float = 1.0) -> str:
    return "[  n/a ]" if not iv else f"[{iv[0] * scale:5.1f}, {iv[1] * scale:5.1f}]"


def format_metrics(report: dict) -> str:
    lines = [f"sessions: {report['sessions']}   system channel: {report['system_channel']}"]
    held_out = report.get("out_of_sample")
    if held_out:
        lines.append(f"human reference on {len(held_out['conversation_ids'])} conversations, none of the "
                     f"{held_out['tuned_on_conversations'] or 'unlisted'} the thresholds were tuned on")
    for m in report["metrics"].values():
        lines.append(f"{m['title']}  instances {m['instances']}, threshold {m['threshold']:g}")
        for name, d in m["decisions"].items():
            a = m["agreement"][name]
            lines.append(
                f"  {name:30s} {d['count']:7d} ({_pct(d['percent'])}%)   agreement {_pct(a['percent'])}% "
                f"{_interval(a['ci_95_percent'])} ({a['ci_unit']})   session mean {_pct(a['session_mean_percent'])}% "
                f"{_interval(a['session_ci_95'])}"
            )
    conf = report.get("confusion")
    if conf:
        lines.append(f"single-label confusion (% of {conf['total']} system decisions; "
                     "rows judge label L^gen, columns decision made):")
        lines.append("        " + "".join(f"{x:>8s}" for x in LABEL_NAMES))
        for name, row in zip(LABEL_NAMES, conf["percent"]):
            lines.append(f"  {name:6s}" + "".join(f"{v:8.2f}" for v in row))
    return "\n".join(lines)


def format_tune(report: dict) -> str:
    lines = [f"tuned on {report['conversations']} conversations of {report['corpus']}",
             f"{'metric / decision':52s} {'threshold':>9s} {'agreement':>9s} {'ME':>6s} {'n':>7s}"]
    for m in report["metrics"].values():
        if m["threshold"] is None:
            lines.append(f"{m['title']}: no instances")
            continue
        lines.append(m["title"])
        for name, agree, me, n in (
            (m["decisions"][0], m["agreement_positive"], m["margin_of_error_positive"], m["n_positive"]),
            (m["decisions"][1], m["agreement_negative"], m["margin_of_error_negative"], m["n_negative"]),
        ):
            lines.append(f"  {name:50s} {m['threshold']:9.2f} {100 * agree:8.1f}% {_pct(100 * me)} {n:7d}")
    lines.append("operating points (best one-vs-rest F1): " + ", ".join(
        f"{k} {v['threshold']:.2f} (F1 {v['f1']:.3f})" for k, v in report["operating_points"].items()))
    if "written" in report:
        lines.append(f"wrote {report['written']}")
    return "\n".join(lines)


def _is_switchboard(path: Path) -> bool:
    return (path / "swb_ms98_transcriptions").is_dir()


def cmd_metrics(args) -> dict:
    check_ray_options(args)
    first = Path(args.recordings[0])
    if args.run_dir:
        if _is_switchboard(first):
            raise ValueError("--run-dir scores recordings; the Switchboard human reference runs without it")
        return metrics_run(args, event_params_from_options(args))
    model, thresholds = load_judge(args.checkpoint, args.thresholds)
    if _is_switchboard(first):
        if len(args.recordings) > 1:
            raise ValueError("give one Switchboard directory, or recordings, not both")
        ids = switchboard_ids(first, args.split, args.split_list, args.limit, args.half)
        if not ids:
            raise ValueError(f"no Switchboard conversations in the {args.half} half of the list")
        return human_reference_report(first, ids, model, thresholds, event_params_from_options(args))
    if args.system_channel is None:
        raise ValueError("--system-channel (0 or 1) is required for recordings of a dialogue system")
    return metrics_report([Path(p) for p in args.recordings], args.system_channel, model, thresholds,
                          event_params_from_options(args))


def cmd_tune(args) -> dict:
    root = Path(args.corpus)
    if not _is_switchboard(root):
        raise ValueError(f"{root} is not a Switchboard directory (no swb_ms98_transcriptions/ inside)")
    ckpt = checkpoint_path(args.checkpoint)
    model = load_checkpoint(ckpt)
    ids = switchboard_ids(root, args.split, args.split_list, args.limit, args.half)
    if not ids:
        raise ValueError(f"no Switchboard conversations in the {args.half} half of the list")
    report, tuned = tune_report(root, ids, model, ckpt, event_params_from_options(args))
    out = Path(args.out) if args.out else thresholds_path(ckpt)
    sensitivity = {k: {x: v[x] for x in ("threshold", "agreement_positive", "agreement_negative",
                                         "margin_of_error_positive", "margin_of_error_negative",
                                         "n_positive", "n_negative") if x in v}
                   for k, v in report["metrics"].items()}
    save_thresholds(tuned, out, extra={"tuned_on": {"corpus": str(root), "conversations": len(ids),
                                                    "split": args.split_list or args.split, "half": args.half,
                                                    "rule": HALF_RULE, "conversation_ids": list(ids)},
                                       "sensitivity": sensitivity})
    report["written"] = str(out)
    return report


def _switchboard_split(root: Path, split: str, limit: int | None) -> list[str]:
    if not _is_switchboard(root):
        raise TurnEndError(f"{root} is not a Switchboard directory (no swb_ms98_transcriptions/ inside)")
    ids = conversation_ids(root, split=split)
    return ids[:limit] if limit else ids


def _progress(total_desc: str):
    return lambda items: tqdm(items, desc=total_desc, unit="conv", disable=None)


def cmd_fit_turn_end(args) -> dict:
    root = Path(args.corpus)
    ids = _switchboard_split(root, "train", args.conversations)
    model = fit_turn_end_model(root, ids, progress=_progress("training conversations"), judge_path=args.judge)
    digest = save_turn_end_model(model, args.out)
    questions = model.questions.provenance if model.questions is not None else None
    return {"written": str(args.out), "sha256": digest, "conversations": len(ids),
            "silences": model.provenance["silences"],
            "question_cue": None if questions is None else {k: questions[k] for k in (
                "conversations", "units", "questions", "features")},
            "base_rate": model.base_rate, "shrinkage": model.shrinkage, "weights": model.weights}


def format_fit_turn_end(report: dict) -> str:
    weights = "; ".join(f"{k}: " + ", ".join(f"{x:+.3f}" for x in v) for k, v in report["weights"].items())
    return (f"wrote {report['written']} (sha256 {report['sha256'][:16]}...) from {report['silences']} silences of "
            f"{report['conversations']} training conversations; base rate {report['base_rate']:.3f}, shrinkage "
            f"{report['shrinkage']:g}; weights (intercept, then words, judge, question logit, question P as present) {weights}"
            + ("" if report["question_cue"] is None else
               "; question cue from {units} dialog-act units ({questions} questions) of {conversations} "
               "conversations, {features} features".format(**report["question_cue"])))


def cmd_evaluate_turn_end(args) -> dict:
    root = Path(args.corpus)
    model = load_turn_end_model(args.model)
    ids = _switchboard_split(root, "val", args.conversations)
    judge = load_checkpoint(args.judge)
    question_cue = None
    if model.questions is not None:
        # The question cue learnt from dialog acts of validation conversations: those stay out.
        trained_on = set(model.questions.provenance.get("conversation_ids", []))
        held_out = [c for c in ids if c not in trained_on and has_dialog_acts(root, c)]
        units = [u for c in tqdm(held_out, desc="dialog acts", unit="conv", disable=None)
                 for u in dialog_act_units(root, c)]
        question_cue = question_roc_auc(model.questions, units, utterance_tokens)
        question_cue.update(conversations=len(held_out), excluded=sum(c in trained_on for c in ids))
        ids = [c for c in ids if c not in trained_on]
    silences = [s for _, s in switchboard_silences(root, ids, judge, _progress("validation conversations"))]
    report = evaluate_silences(model, silences)
    report["question_cue"] = question_cue
    return report


def _report_command(compute, formatter):
    return report_command(compute, formatter, around=lambda args: torch_threads(args.threads))


def _common(p, thresholds: bool = False) -> None:
    p.add_argument("--checkpoint", help="judge checkpoint (default: the packaged one); a word-conditioned "
                                        "one needs words (JSON \"words\", or faster-whisper on audio)")
    if thresholds:
        p.add_argument("--thresholds",
                       help="thresholds JSON (default: the one next to the checkpoint, else reference values)")
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    p.add_argument("--json", action="store_true", help="print the full report as JSON")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m judge", description="The Talking Turns judge")
    sub = parser.add_subparsers(dest="command", required=True)

    t = sub.add_parser("train", help="train a judge (voice activity, or voice activity + words) on a corpus")
    t.add_argument("--corpus", nargs=2, metavar=("NAME", "DIR"), required=True, help="e.g. switchboard /data/swb")
    t.add_argument("--out", required=True, help="checkpoint file to write (.pt); manifest and card go next to it")
    t.add_argument("--inputs", choices=("va", "words"), default="va",
                   help="va: voice activity only; words: also each speaker's most recent completed word")
    t.add_argument("--vocabulary-size", type=int, default=1000,
                   help="words: the N most frequent training words get their own embedding")
    t.add_argument("--word-dim", type=int, default=16, help="words: embedding size")
    t.add_argument("--tbu-weight", type=float, default=1.0,
                   help="alpha of TurnNat eq. 6: future-activity loss weight of frames inside turn-boundary units "
                        "(1 = unweighted, as judge_va.pt; the paper's best is 8)")
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

    p = sub.add_parser("metrics", help="Talking Turns timing metrics of a system (or the human reference)")
    p.add_argument("recordings", nargs="+",
                   help="two-channel audio files or voice-activity JSON files (sessions), or one Switchboard directory")
    p.add_argument("--system-channel", type=int, choices=(0, 1), help="the dialogue system's channel")
    p.add_argument("--split", default="val", help="Switchboard split (human reference)")
    p.add_argument("--split-list", help="file of Switchboard conversation ids (human reference)")
    p.add_argument("--limit", type=int, help="use only the first N Switchboard conversations")
    p.add_argument("--half", choices=HALVES, default="reference",
                   help="human reference: which half of the conversations (default: reference, the half "
                        "thresholds are not tuned on)")
    _common(p, thresholds=True)
    add_event_options(p)
    add_ray_options(p)
    p.set_defaults(func=_report_command(cmd_metrics, format_metrics))

    p = sub.add_parser("tune", help="tune metric thresholds and operating points on human-human data")
    p.add_argument("corpus", help="Switchboard directory (holding splits/ and swb_ms98_transcriptions/)")
    p.add_argument("--split", default="val")
    p.add_argument("--split-list")
    p.add_argument("--limit", type=int)
    p.add_argument("--half", choices=HALVES, default="tuning",
                   help="which half of the conversations to tune on (default: tuning; the human reference "
                        "is scored on the other)")
    p.add_argument("--out", help="where to write the thresholds (default: next to the checkpoint)")
    _common(p)
    add_event_options(p)
    p.set_defaults(func=_report_command(cmd_tune, format_tune))

    p = sub.add_parser("fit-turn-end", help="fit the turn-end model (words + VA judge + pause survival) "
                                            "on the Switchboard training split")
    p.add_argument("corpus", help="Switchboard directory (holding splits/ and swb_ms98_transcriptions/)")
    p.add_argument("--out", required=True, help="model JSON to write; its manifest goes next to it")
    p.add_argument("--conversations", type=int, help="use only the first N training conversations")
    p.add_argument("--judge", help="VA judge checkpoint whose P(T) is a feature (default: the packaged one)")
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=_report_command(cmd_fit_turn_end, format_fit_turn_end))

    p = sub.add_parser("evaluate-turn-end", help="the turn-end model on the Switchboard validation split")
    p.add_argument("corpus", help="Switchboard directory (holding splits/ and swb_ms98_transcriptions/)")
    p.add_argument("--model", help="turn-end model JSON (default: the packaged one)")
    p.add_argument("--conversations", type=int, help="use only the first N validation conversations")
    p.add_argument("--judge", help="VA judge checkpoint (default: the packaged one; must be the one fitted with)")
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=_report_command(cmd_evaluate_turn_end, format_turn_end_evaluation))
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        result = args.func(args)
    except (TrainingError, EvaluationError, CheckpointError, TurnEndError, QuestionModelError, CorpusError,
            FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return result if isinstance(result, int) else 0


if __name__ == "__main__":
    sys.exit(main())

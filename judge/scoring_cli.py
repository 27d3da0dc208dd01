"""Scoring subcommands of `python -m judge`: metrics, naturalness, pairs, tune.

`judge/__main__.py` calls `register(subparsers)`; every subcommand sets `func(args) -> exit status`
and turns bad input into a one-line `error: ...` on stderr (exit status 2).

    metrics RECORDING... --system-channel N   the five Talking Turns metrics of a dialogue system
    metrics SWITCHBOARD_DIR [--split val]      the human reference (each speaker in the system role)
    naturalness RECORDING...                   TurnNat naturalness per dialogue
    metrics | naturalness DIR|MANIFEST|RECORDING... --run-dir RUN [--workers N | --ray-address A]
                                               the same as Ray tasks, resumable (judge/corpus_run.py)
    pairs MANIFEST                             DeltaNLL, pairwise accuracy, C-index
    tune SWITCHBOARD_DIR [--split val]         thresholds tuned on human-human data, written next
                                               to the checkpoint (CHECKPOINT.thresholds.json)
RECORDING: a two-channel audio file (one speaker per channel) or a voice-activity JSON.
"""

from __future__ import annotations

import math
from pathlib import Path

from judge.corpus_run import metrics_run, naturalness_run
from judge.scorers import DEFAULT_SCORER, SCORERS, TURNNAT_PAPER
from judge.scoring import (
    checkpoint_path,
    human_reference_report,
    load_judge,
    metrics_report,
    naturalness_report,
    pairs_from_manifest,
    switchboard_ids,
    tune_report,
)
from judge.thresholds import LABEL_NAMES, save_thresholds, thresholds_path
from jobs.ray_runs import add_ray_options, check_ray_options
from speech.cpus import torch_threads
from turntaking.commands import report_command
from turntaking.events import add_event_options, event_params_from_options


def _pct(v) -> str:
    return "  n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:5.1f}"


def _interval(iv, scale: float = 1.0) -> str:
    return "[  n/a ]" if not iv else f"[{iv[0] * scale:5.1f}, {iv[1] * scale:5.1f}]"


def format_metrics(report: dict) -> str:
    lines = [f"sessions: {report['sessions']}   system channel: {report['system_channel']}"]
    for m in report["metrics"].values():
        lines.append(f"{m['title']}  instances {m['instances']}, threshold {m['threshold']:g}")
        for name, d in m["decisions"].items():
            a = m["agreement"][name]
            lines.append(
                f"  {name:30s} {d['count']:7d} ({_pct(d['percent'])}%)   agreement {_pct(a['percent'])}% "
                f"{_interval(a['wilson_95'], 100)}   session mean {_pct(a['session_mean_percent'])}% "
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


def format_naturalness(report: dict) -> str:
    cue = f" + audio cue {report['audio_cue']}" if report.get("audio_cue") else ""
    # timing-hazard also says where each dialogue's least likely 6 s begin: where to listen first.
    peak = any("peak_start_s" in r for r in report["dialogues"])
    lines = [f"scorer {report['scorer']}{cue} (dialog NLL in {report['units']}; naturalness = -dialog NLL)",
             f"{'recording':40s} {'naturalness':>11s} {'dialog NLL':>10s}" + ("  least likely 6 s from" if peak else "")]
    for r in report["dialogues"]:
        at = f"  {r['peak_start_s']:8.2f} s" if "peak_start_s" in r else ""
        lines.append(f"{r['recording'][-40:]:40s} {r['naturalness']:11.4f} {r['dialog_nll']:10.4f}{at}")
    return "\n".join(lines)


def _acc_line(name: str, s: dict) -> str:
    a, c = s["pair_accuracy"], s["c_index"]
    acc = "n/a" if a["value"] is None else f"{100 * a['value']:5.1f}% {_interval(a['wilson_95'], 100)}"
    ci = "n/a" if c["value"] is None else f"{c['value']:.3f}"
    return f"  {name:24s} pairs {s['pairs']:4d}   accuracy {acc}   C-index {ci}   mean DeltaNLL {s['mean_delta_nll']:+.4f}"


def format_pairs(report: dict) -> str:
    lines = [f"scorer {report['scorer']} ({report['units']})", f"{'pair_id':32s} {'type':24s} {'DeltaNLL':>9s}"]
    for p in report["pair_scores"]:
        lines.append(f"{p['pair_id'][:32]:32s} {p['type'][:24]:24s} {p['delta_nll']:+9.4f}")
    lines.append(_acc_line("all", report))
    for t, s in report["per_type"].items():
        lines.append(_acc_line(t, s))
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


# ---------------------------------------------------------------------------------------------
# command line


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
        ids = switchboard_ids(first, args.split, args.split_list, args.limit)
        return human_reference_report(first, ids, model, thresholds, event_params_from_options(args))
    if args.system_channel is None:
        raise ValueError("--system-channel (0 or 1) is required for recordings of a dialogue system")
    return metrics_report([Path(p) for p in args.recordings], args.system_channel, model, thresholds,
                          event_params_from_options(args))


def _scorer_model(args):
    """--scorer-model, or for turnnat-paper the judge --checkpoint."""
    if args.scorer == TURNNAT_PAPER:
        return args.checkpoint
    if args.checkpoint:
        raise ValueError(f"--checkpoint is the judge of the turnnat-paper scorer: add --scorer turnnat-paper "
                         f"(the {args.scorer} scorer takes --scorer-model)")
    return args.scorer_model


def cmd_naturalness(args) -> dict:
    check_ray_options(args)
    if args.run_dir:
        return naturalness_run(args, _scorer_model(args))
    return naturalness_report([Path(p) for p in args.recordings], args.scorer, _scorer_model(args), args.audio_cue)


def cmd_pairs(args) -> dict:
    return pairs_from_manifest(Path(args.manifest), args.scorer, _scorer_model(args), args.audio_cue)


def cmd_tune(args) -> dict:
    from judge.model import load_checkpoint

    root = Path(args.corpus)
    if not _is_switchboard(root):
        raise ValueError(f"{root} is not a Switchboard directory (no swb_ms98_transcriptions/ inside)")
    ckpt = checkpoint_path(args.checkpoint)
    model = load_checkpoint(ckpt)
    ids = switchboard_ids(root, args.split, args.split_list, args.limit)
    report, tuned = tune_report(root, ids, model, ckpt, event_params_from_options(args))
    out = Path(args.out) if args.out else thresholds_path(ckpt)
    sensitivity = {k: {x: v[x] for x in ("threshold", "agreement_positive", "agreement_negative",
                                         "margin_of_error_positive", "margin_of_error_negative",
                                         "n_positive", "n_negative") if x in v}
                   for k, v in report["metrics"].items()}
    save_thresholds(tuned, out, extra={"tuned_on": {"corpus": str(root), "conversations": len(ids)},
                                       "sensitivity": sensitivity})
    report["written"] = str(out)
    return report


def _handler(compute, formatter):
    return report_command(compute, formatter, around=lambda args: torch_threads(args.threads))


def _common(p, thresholds: bool = False) -> None:
    p.add_argument("--checkpoint", help="judge checkpoint (default: the packaged one); a word-conditioned "
                                        "one needs words (JSON \"words\", or faster-whisper on audio)")
    if thresholds:
        p.add_argument("--thresholds",
                       help="thresholds JSON (default: the one next to the checkpoint, else reference values)")
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    p.add_argument("--json", action="store_true", help="print the full report as JSON")


def _scorer_options(p) -> None:
    p.add_argument("--scorer", choices=SCORERS, default=DEFAULT_SCORER,
                   help="timing-hazard (default): likelihood of the timing in context; durations: context-free "
                        "baseline; turnnat-paper: the paper's DialogNLL of the GRU judge (--checkpoint)")
    p.add_argument("--scorer-model", help="model file replacing the scorer's packaged one (timing-hazard, durations)")
    p.add_argument("--audio-cue", action="store_true",
                   help="timing-hazard on two-channel audio: Smart Turn v3.2's P(utterance complete) at every IPU "
                        "end informs who should speak next (judge/turn_cue.py)")


def register(subparsers) -> None:
    p = subparsers.add_parser("metrics", help="Talking Turns timing metrics of a system (or the human reference)")
    p.add_argument("recordings", nargs="+",
                   help="two-channel audio files or voice-activity JSON files (sessions), or one Switchboard directory")
    p.add_argument("--system-channel", type=int, choices=(0, 1), help="the dialogue system's channel")
    p.add_argument("--split", default="val", help="Switchboard split (human reference)")
    p.add_argument("--split-list", help="file of Switchboard conversation ids (human reference)")
    p.add_argument("--limit", type=int, help="use only the first N Switchboard conversations")
    _common(p, thresholds=True)
    add_event_options(p)
    add_ray_options(p)
    p.set_defaults(func=_handler(cmd_metrics, format_metrics))

    p = subparsers.add_parser("naturalness", help="naturalness per dialogue (default scorer: timing-hazard)")
    p.add_argument("recordings", nargs="+", help="two-channel audio files or voice-activity JSON files")
    _scorer_options(p)
    _common(p)
    add_ray_options(p)
    p.set_defaults(func=_handler(cmd_naturalness, format_naturalness))

    p = subparsers.add_parser("pairs", help="TurnNat on natural/perturbed pairs (JSONL manifest)")
    p.add_argument("manifest", help="JSONL: pair_id, type, natural, perturbed (paths relative to the manifest)")
    _scorer_options(p)
    _common(p)
    p.set_defaults(func=_handler(cmd_pairs, format_pairs))

    p = subparsers.add_parser("tune", help="tune metric thresholds and operating points on human-human data")
    p.add_argument("corpus", help="Switchboard directory (holding splits/ and swb_ms98_transcriptions/)")
    p.add_argument("--split", default="val")
    p.add_argument("--split-list")
    p.add_argument("--limit", type=int)
    p.add_argument("--out", help="where to write the thresholds (default: next to the checkpoint)")
    _common(p)
    add_event_options(p)
    p.set_defaults(func=_handler(cmd_tune, format_tune))

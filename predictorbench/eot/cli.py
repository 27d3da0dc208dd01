"""`python -m predictorbench eot predict | metrics | compare` (registered by predictorbench/__main__.py).

    predict --path DATA [--split S] --adapter vad|cascade|judge|smart-turn|module:Class --output-dir OUT
    metrics --predictions RUN/predictions.parquet [--score-point S] [--output-dir DIR] [--json]
    compare LANGUAGE_DIR
Bad input ends with one line `error: ...` on stderr and exit status 2.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from turntaking.commands import guard
from predictorbench.eot.data import EotDataError
from predictorbench.eot.metrics import MetricsError, SweepParams, compute_metrics
from predictorbench.eot.predictors import PredictorError
from predictorbench.eot.runs import (
    RunError,
    predict,
    read_manifest,
    span_durations_for,
    write_json,
)

ERRORS = (EotDataError, MetricsError, PredictorError, RunError, FileNotFoundError, ValueError, OSError)


def _log(message: str) -> None:
    print(message, file=sys.stderr)


def cmd_predict(args) -> int:
    kwargs = {"checkpoint": args.checkpoint} if args.adapter == "judge" and args.checkpoint else {}
    runs = predict(args.path, args.adapter, args.output_dir, split=args.split, name=args.name,
                   min_silence_span=args.min_silence_span, inference_interval=args.inference_interval,
                   transcript_lag=args.transcript_lag, batch_size=args.batch_size, limit=args.limit,
                   overwrite=args.overwrite, adapter_kwargs=kwargs, log=_log)
    for run in runs:
        print(run / "predictions.parquet")
    return 0


def metrics_for_file(predictions, score_point=None, min_hold=0.2, max_hold=5.0, output_dir=None) -> dict:
    import pandas as pd

    predictions = Path(predictions)
    if not predictions.is_file():
        raise FileNotFoundError(f"predictions file not found: {predictions}")
    try:
        df = pd.read_parquet(predictions)
    except Exception as exc:  # pyarrow raises several types for unreadable files
        raise MetricsError(f"{predictions}: not a readable Parquet file ({exc.__class__.__name__})") from None
    if score_point is None:
        score_point = read_manifest(predictions.parent).get("score_point")
    params = SweepParams(min_hold_span_duration=min_hold, max_hold_span_duration=max_hold, score_point=score_point)
    tradeoff, summary = compute_metrics(df, params, span_durations_for(predictions))
    out = Path(output_dir) if output_dir else predictions.parent / "metrics"
    out.mkdir(parents=True, exist_ok=True)
    tradeoff.to_parquet(out / "tradeoff.parquet", index=False)
    write_json(out / "summary.json", summary)
    summary["written"] = str(out)
    return summary


def format_summary(s: dict) -> str:
    def fmt(k, v):
        return "n/a" if v is None else (f"{100 * v:.1f}%" if k.startswith("cutoff") else f"{1000 * v:.0f} ms")

    keys = ("cutoff_at_300ms", "cutoff_at_600ms", "latency_at_5pct", "latency_at_10pct")
    lines = [f"{s['n_hold_spans']} hold spans, {s['n_eot_spans']} eot spans "
             f"({s['n_hold_spans_dropped']} hold spans outside the duration filter)",
             f"{'':18s}{'model':>10s}{'VAD':>10s}"]
    for k in keys:
        lines.append(f"{k:18s}{fmt(k, s[k]):>10s}{fmt(k, s['vad_baseline'][k]):>10s}")
    lines.append(f"Pareto frontier: {len(s['pareto'])} policies; AUC {s['diagnostics']['auc']}, "
                 f"AP {s['diagnostics']['ap']} (diagnostics only)")
    lines.append(f"wrote {s['written']}")
    return "\n".join(lines)


def cmd_metrics(args) -> int:
    summary = metrics_for_file(args.predictions, args.score_point, args.min_hold_span_duration,
                               args.max_hold_span_duration, args.output_dir)
    print(json.dumps(summary, indent=1) if args.json else format_summary(summary))
    return 0


def cmd_compare(args) -> int:
    from predictorbench.eot.report import compare

    lang_dir = Path(args.directory)
    if not lang_dir.is_dir():
        raise FileNotFoundError(f"not a directory: {lang_dir}")
    print(compare(lang_dir, args.min_hold_span_duration, args.max_hold_span_duration))
    return 0


def _guard(func):
    return guard(func, ERRORS)


def register(subparsers) -> None:
    eot = subparsers.add_parser("eot", help="end-of-turn benchmark (eot-bench methodology)")
    sub = eot.add_subparsers(dest="eot_command", required=True)

    p = sub.add_parser("predict", help="score every silence span of a dataset causally")
    p.add_argument("--path", required=True, help="Parquet folder/file or a dataset saved with save_to_disk")
    p.add_argument("--name", help="dataset config name (recorded only; languages come from the rows)")
    p.add_argument("--split", help="split to read (Parquet files <split>-*.parquet or a DatasetDict split)")
    p.add_argument("--adapter", required=True, help="vad, cascade, judge, smart-turn, or module:Class")
    p.add_argument("--checkpoint", help="judge checkpoint for --adapter judge (default: the packaged one)")
    p.add_argument("--output-dir", default="output")
    p.add_argument("--min-silence-span", type=float, default=0.1)
    p.add_argument("--inference-interval", type=float, default=0.1)
    p.add_argument("--transcript-lag", type=float, default=0.5)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--limit", type=int, help="only the first N rows")
    p.add_argument("--overwrite", action="store_true", help="redo existing model runs")
    p.set_defaults(func=_guard(cmd_predict))

    p = sub.add_parser("metrics", help="policy sweep, Pareto frontier and budget operating points")
    p.add_argument("--predictions", required=True, help="a model run's predictions.parquet")
    p.add_argument("--score-point", type=float, help="default: the run manifest's score_point, else first crossing")
    p.add_argument("--min-hold-span-duration", type=float, default=0.2)
    p.add_argument("--max-hold-span-duration", type=float, default=5.0)
    p.add_argument("--output-dir", help="default: RUN/metrics")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_guard(cmd_metrics))

    p = sub.add_parser("compare", help="comparison report of the model runs of one language folder")
    p.add_argument("directory", help="span-set language folder, e.g. OUT/<dataset>__<split>__min_silence_100ms/en")
    p.add_argument("--min-hold-span-duration", type=float, default=0.2)
    p.add_argument("--max-hold-span-duration", type=float, default=5.0)
    p.set_defaults(func=_guard(cmd_compare))

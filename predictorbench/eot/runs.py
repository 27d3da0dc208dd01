"""eot-bench run folders: one span set per dataset/split/min-silence, one folder per language, one
model run per adapter and options hash.

    OUTPUT/<dataset>__<split>__min_silence_<ms>ms/
      <language>/
        span_set.parquet, span_set_manifest.json
        <adapter_class_in_snake_case>__<options-hash>/
          predictions.parquet, manifest.json
          (streaming: events.parquet, summary.json, skipped.parquet when rows were skipped)
          metrics/tradeoff.parquet, metrics/summary.json      (python -m predictorbench eot metrics)
      comparison/ ...                                           (python -m predictorbench eot compare)

<dataset> is the Hub id with "/" as "__" (livekit/eot-bench-data -> livekit__eot-bench-data), or
the folder name of a local dataset. The options hash covers everything that changes predictions
(adapter id and options, min silence span, inference interval, transcript lag, score point).
Each model run must cover exactly its language's span set: the unique (id, span_index) pairs.
"""

from __future__ import annotations

import hashlib
import json
import platform
import sys
import time
from collections import defaultdict
from pathlib import Path

import pandas as pd

from predictorbench.eot import predictors
from predictorbench.eot.data import iter_rows
from predictorbench.eot.spans import INFERENCE_INTERVAL, MIN_SILENCE_SPAN, TRANSCRIPT_LAG, row_spans
from turntaking.jsonfiles import read_json


class RunError(ValueError):
    """A run folder that is missing files or does not match its span set."""


def options_hash(options: dict) -> str:
    text = json.dumps(options, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def dataset_slug(path) -> str:
    p = Path(str(path))
    return p.name if p.exists() else str(path).strip("/").replace("/", "__")


def span_set_root(output_dir, path, split, min_silence_span: float = MIN_SILENCE_SPAN) -> Path:
    ms = int(round(min_silence_span * 1000))
    return Path(output_dir) / f"{dataset_slug(path)}__{split or 'all'}__min_silence_{ms}ms"


def write_json(path: Path, data: dict) -> None:
    path.write_text(json.dumps(data, indent=1, sort_keys=True, default=str) + "\n")


def write_span_set(lang_dir: Path, rows, min_silence_span: float, source: dict) -> pd.DataFrame:
    spans = [s.as_dict() for row in rows for s in row_spans(row, min_silence_span)]
    table = pd.DataFrame(spans, columns=["id", "language", "span_index", "start", "end", "label", "duration"])
    lang_dir.mkdir(parents=True, exist_ok=True)
    table.to_parquet(lang_dir / "span_set.parquet", index=False)
    write_json(lang_dir / "span_set_manifest.json", {
        **source, "min_silence_span": min_silence_span, "n_rows": len(rows), "n_spans": len(table),
        "n_eot": int((table["label"] == "eot").sum()), "n_hold": int((table["label"] == "hold").sum()),
    })
    return table


def read_span_set(lang_dir) -> pd.DataFrame | None:
    f = Path(lang_dir) / "span_set.parquet"
    return pd.read_parquet(f) if f.is_file() else None


def span_durations_for(predictions_file) -> dict | None:
    """{(id, span_index): duration} from the span set next to a model run, if there is one."""
    table = read_span_set(Path(predictions_file).resolve().parent.parent)
    if table is None:
        return None
    return {(str(r.id), int(r.span_index)): float(r.duration) for r in table.itertuples()}


def check_coverage(predictions: pd.DataFrame, span_set: pd.DataFrame, where: str) -> None:
    want = set(zip(span_set["id"].astype(str), span_set["span_index"].astype(int)))
    have = set(zip(predictions["id"].astype(str), predictions["span_index"].astype(int)))
    if want != have:
        missing, extra = sorted(want - have)[:3], sorted(have - want)[:3]
        raise RunError(f"{where}: predictions do not cover the span set exactly "
                       f"({len(want - have)} spans missing, e.g. {missing}; {len(have - want)} extra, e.g. {extra})")


def run_complete(run_dir: Path) -> bool:
    return (run_dir / "predictions.parquet").is_file() and (run_dir / "manifest.json").is_file()


def predict(path, adapter_ref: str, output_dir, split: str | None = None, name: str | None = None,
            min_silence_span: float = MIN_SILENCE_SPAN, inference_interval: float = INFERENCE_INTERVAL,
            transcript_lag: float = TRANSCRIPT_LAG, batch_size: int = 128, limit: int | None = None,
            overwrite: bool = False, adapter_kwargs: dict | None = None, log=None) -> list[Path]:
    """Predict every supported language of a dataset; returns the model run folders written or kept."""
    log = log or (lambda m: None)
    adapter = predictors.load_adapter(adapter_ref, **(adapter_kwargs or {}))
    by_language = defaultdict(list)
    for row in iter_rows(path, split, limit, name):
        by_language[row.language].append(row)
    if not by_language:
        raise RunError(f"{path}: no rows")
    root = span_set_root(output_dir, path, split, min_silence_span)
    streaming = predictors.is_streaming(adapter)
    score_point = getattr(adapter, "score_point", None)
    options = {
        "adapter_id": adapter.adapter_id,
        "adapter_options": adapter.options() if hasattr(adapter, "options") else {},
        "min_silence_span": min_silence_span, "inference_interval": inference_interval,
        "transcript_lag": transcript_lag, "score_point": score_point,
    }
    run_name = f"{predictors.adapter_name(adapter)}__{options_hash(options)}"
    written = []
    for language, rows in sorted(by_language.items()):
        if hasattr(adapter, "supports_language") and not adapter.supports_language(language):
            log(f"{language}: not supported by {adapter.adapter_id}, skipped")
            continue
        lang_dir = root / language
        source = {"path": str(path), "name": name, "split": split, "language": language}
        span_set = write_span_set(lang_dir, rows, min_silence_span, source)
        run_dir = lang_dir / run_name
        if run_complete(run_dir) and not overwrite:
            log(f"{language}: {run_dir} exists, kept (use --overwrite to redo)")
            written.append(run_dir)
            continue
        started = time.monotonic()
        skipped = []
        if streaming:
            preds, skipped = predictors.predict_streaming_rows(adapter, rows, min_silence_span, inference_interval)
        else:
            preds = predictors.predict_batch_rows(adapter, rows, min_silence_span, inference_interval,
                                                  transcript_lag, batch_size)
        elapsed = time.monotonic() - started
        table = pd.DataFrame(preds, columns=list(predictors.PREDICTION_COLUMNS))
        if skipped:
            span_set = span_set[~span_set["id"].isin({s["id"] for s in skipped})]
        check_coverage(table, span_set, str(run_dir))
        run_dir.mkdir(parents=True, exist_ok=True)
        table.to_parquet(run_dir / "predictions.parquet", index=False)
        audio_s = sum(r.duration for r in rows)
        if streaming:
            pd.DataFrame({"id": [r.id for r in rows], "events": ["[]"] * len(rows)}).to_parquet(
                run_dir / "events.parquet", index=False)
            write_json(run_dir / "summary.json", {"rows": len(rows), "skipped": len(skipped),
                                                  "predictions": len(table), "elapsed_s": elapsed})
            if skipped:
                pd.DataFrame(skipped).to_parquet(run_dir / "skipped.parquet", index=False)
        write_json(run_dir / "manifest.json", {
            **options, **source, "adapter": adapter_ref, "adapter_class": type(adapter).__name__,
            "display_name": getattr(adapter, "display_name", adapter.adapter_id),
            "mode": "streaming" if streaming else "batch", "options_hash": options_hash(options),
            "n_rows": len(rows), "n_predictions": len(table), "audio_seconds": audio_s,
            "elapsed_s": round(elapsed, 3), "real_time_factor": round(elapsed / audio_s, 5) if audio_s else None,
            "python": sys.version.split()[0], "platform": platform.platform(),
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        })
        log(f"{language}: {len(table)} predictions for {len(rows)} turns in {elapsed:.1f} s -> {run_dir}")
        written.append(run_dir)
    return written


def read_manifest(run_dir) -> dict:
    f = Path(run_dir) / "manifest.json"
    return read_json(f, "run manifest", RunError) if f.is_file() else {}


def model_runs(lang_dir) -> list[Path]:
    """Model run folders of a language folder that have metrics."""
    lang_dir = Path(lang_dir)
    return sorted(d for d in lang_dir.iterdir()
                  if d.is_dir() and (d / "metrics" / "summary.json").is_file() and (d / "metrics" / "tradeoff.parquet").is_file())

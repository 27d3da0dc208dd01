"""eot-bench harness speed: the metric sweep at eot-bench-data scale and the predictors' speed.

    .venv/bin/python benchmarks/bench_eot.py                  # 5,000 turns of synthetic scores
    .venv/bin/python benchmarks/bench_eot.py --turns 20000 --speech 20

Part 1 times `compute_metrics` (21 thresholds x 21 action delays x 50 timeouts, plus the 10 ms VAD
baseline grid) on a synthetic prediction table: each turn has 1-4 hold pauses of 0.1-2 s and a
2 s eot span, p_eot rises with silence, faster on eot spans (target: < 60 s for 5,000 turns on
the 2-core machine). Part 2 runs the built-in adapters over `--speech` espeak-ng turns and prints
their real-time factor (seconds of compute per second of audio).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from predictorbench.eot.data import EotRow
from predictorbench.eot.metrics import compute_metrics
from predictorbench.eot.predictors import (
    CascadeEndpointAdapter,
    JudgeTurnChangeAdapter,
    VadBaselineAdapter,
    predict_streaming_rows,
)


def synthetic_predictions(turns: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for t in range(turns):
        n_hold = int(rng.integers(1, 5))
        durations = list(np.round(rng.uniform(0.1, 2.0, n_hold), 2)) + [2.0]
        for k, d in enumerate(durations):
            eot = k == len(durations) - 1
            rate = rng.uniform(0.5, 2.0) * (2.0 if eot else 1.0)
            for j in range(1, int(np.floor(d / 0.1 + 1e-6)) + 1):
                s = round(0.1 * j, 6)
                rows.append((f"t{t}", "en", k, 10.0 * k + s, s, float(1 - np.exp(-rate * s)), "eot" if eot else "hold"))
    return pd.DataFrame(rows, columns=["id", "language", "span_index", "timestamp", "silence_dur", "p_eot", "label"])


def speech_rows(n: int):
    from tests.predictorbench.speech_fixtures import SR, place

    texts = ["I would like to book a table", "for two people tonight", "can you tell me", "the weather in Paris"]
    rows = []
    for i in range(n):
        audio, segs = place([0.3, (texts[i % 4], 0.3 + 0.2 * (i % 5)), (texts[(i + 1) % 4], 1.5)])
        spans = [(segs[0][1], segs[1][0]), (segs[1][1], len(audio) / SR)]
        rows.append(EotRow(f"r{i}", "en", audio, spans))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--turns", type=int, default=5000)
    ap.add_argument("--speech", type=int, default=10, help="espeak-ng turns for the adapter speed (0: skip)")
    ap.add_argument("--judge-checkpoint", help="also time the judge adapter with this checkpoint")
    args = ap.parse_args()

    preds = synthetic_predictions(args.turns)
    start = time.perf_counter()
    _, summary = compute_metrics(preds)
    took = time.perf_counter() - start
    print(f"metrics: {args.turns} turns, {summary['n_hold_spans']} hold + {summary['n_eot_spans']} eot spans, "
          f"{len(preds)} prediction rows: {took:.1f} s")
    print(f"  cutoff@300ms {summary['cutoff_at_300ms']:.3f}  latency@5% {summary['latency_at_5pct']}  "
          f"VAD cutoff@300ms {summary['vad_baseline']['cutoff_at_300ms']:.3f}")

    if args.speech:
        rows = speech_rows(args.speech)
        audio_s = sum(r.duration for r in rows)
        adapters = [VadBaselineAdapter(), CascadeEndpointAdapter()]
        if args.judge_checkpoint:
            adapters.append(JudgeTurnChangeAdapter(args.judge_checkpoint))
        for adapter in adapters:
            start = time.perf_counter()
            out, _ = predict_streaming_rows(adapter, rows)
            took = time.perf_counter() - start
            print(f"{adapter.adapter_id:22s} {len(out):5d} scores over {audio_s:.0f} s of audio: {took:.2f} s "
                  f"(real-time factor {took / audio_s:.4f})")


if __name__ == "__main__":
    main()

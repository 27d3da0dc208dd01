"""Training time per epoch of the voice-activity judge on the Switchboard train list.

    .venv/bin/python benchmarks/bench_training.py [--swb /tmp/swb] [--batches 20] [--threads 1]

Development-time script (needs the Switchboard MS-98 alignments; not part of the test suite).
Prepares (or reads from the cache) the train arrays, then times `--batches` training steps of the
default configuration (GRU 64, 20 s windows, batch 64) and the forward-only validation pass over
the same number of batches, and extrapolates to one epoch over every train window.
"""

from __future__ import annotations

import argparse
import math
import time


import numpy as np
import torch

from judge.model import JudgeConfig, JudgeModel
from judge.training import (
    TrainOptions,
    batch_losses,
    corpus_ids,
    label_class_weights,
    load_arrays,
    make_batch,
    windows,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--swb", default="/tmp/swb", help="Switchboard root (splits/, swb_ms98_transcriptions/)")
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--cache-dir", default="/tmp/judge_cache")
    args = parser.parse_args()

    opts = TrainOptions()
    torch.set_num_threads(args.threads)
    t0 = time.time()
    ids = corpus_ids(args.swb, "train")
    data = load_arrays(args.swb, ids, args.cache_dir, opts.tbu_merge_gap_s, "train")
    prepare_s = time.time() - t0

    window_frames = 2 * int(round(opts.window_s * 50 / 2))
    items = windows(data, window_frames, np.random.default_rng(0))
    n_batches = math.ceil(len(items) / opts.batch_size)
    model = JudgeModel(JudgeConfig(hidden_size=opts.hidden_size, num_layers=opts.num_layers))
    optimizer = torch.optim.AdamW(model.parameters(), lr=opts.learning_rate)
    weights = label_class_weights(data.labels, opts.label_weighting)

    batches = [make_batch(data, items[i * opts.batch_size : (i + 1) * opts.batch_size], window_frames, 8.0)
               for i in range(min(args.batches, n_batches))]
    model.train()
    t0 = time.time()
    for batch in batches:
        label_loss, label_norm, va_loss, va_norm = batch_losses(model, batch, weights)
        loss = label_loss / label_norm + va_loss / va_norm
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    step_s = (time.time() - t0) / len(batches)
    model.eval()
    t0 = time.time()
    with torch.no_grad():
        for batch in batches:
            batch_losses(model, batch, weights)
    forward_s = (time.time() - t0) / len(batches)

    frames = len(data.classes)
    print(f"train list: {len(ids)} conversations, {frames / 50 / 3600:.1f} h, {len(items)} windows of "
          f"{opts.window_s:.0f} s, {n_batches} batches of {opts.batch_size}; prepare/cache {prepare_s:.1f} s")
    print(f"training step: {step_s:.2f} s/batch ({opts.batch_size * window_frames / step_s:,.0f} frames/s), "
          f"forward only {forward_s:.2f} s/batch, threads {args.threads}")
    print(f"estimated epoch over every window: {n_batches * step_s / 60:.1f} min "
          f"(+ validation ~{0.45 * n_batches * forward_s / 60:.1f} min on the val list)")


if __name__ == "__main__":
    main()

"""Scoring throughput: Talking Turns judge + TurnNat on one hour of conversation voice activity.

    .venv/bin/python benchmarks/bench_scoring.py [--swb /tmp/swb] [--minutes 60] [--checkpoint PATH]

The hour is Switchboard validation conversations (word-level voice activity) laid end to end
into one long conversation. Timed, after loading the model: chunk labels and states, one causal
model pass, the five metric instance sets (both speakers as the system), the confusion matrix,
and the TurnNat score. Target: >= 1000x real time (an hour in <= 3.6 s) on the 2-core machine.
"""

from __future__ import annotations

import argparse
import sys
import time

import torch

from judge.labels import chunk_states
from judge.metrics import conversation_instances
from judge.reports import load_judge
from naturalness.turnnat_va import score_conversation
from turntaking.activity import Conversation
from turntaking.switchboard import conversation_ids, load_conversation


def long_conversation(root, minutes: float) -> Conversation:
    """Val conversations one after the other until `minutes` are reached (cut to exactly that)."""
    target = minutes * 60.0
    activity, words, offset = ([], []), ([], []), 0.0
    for conv_id in conversation_ids(root, split="val"):
        conv = load_conversation(root, conv_id)
        for k in (0, 1):
            activity[k].extend((s + offset, e + offset) for s, e in conv.activity[k] if s + offset < target)
            words[k].extend(type(w)(w.start + offset, w.end + offset, w.text) for w in conv.words[k]
                            if w.start + offset < target)
        offset += conv.duration
        if offset >= target:
            break
    activity = tuple([(s, min(e, target)) for s, e in segs] for segs in activity)
    return Conversation(target, activity, words, source=f"{minutes:g} min of Switchboard val")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--swb", default="/tmp/swb")
    ap.add_argument("--minutes", type=float, default=60.0)
    ap.add_argument("--checkpoint")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)

    from judge.model import predict

    conv = long_conversation(args.swb, args.minutes)
    model, thresholds = load_judge(args.checkpoint)
    predict(model, Conversation(30.0, ([(1.0, 2.0)], [(2.5, 4.0)])))  # warm-up
    best = None
    for _ in range(args.repeat):
        t = {}
        t0 = time.perf_counter()
        states = chunk_states(conv)
        t["labels"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        preds = predict(model, conv)
        t["model"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        conversation_instances(conv, preds, (0, 1), thresholds.operating_points, states=states)
        t["metrics"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        score = score_conversation(conv, model, predictions=preds)
        t["turnnat"] = time.perf_counter() - t0
        t["total"] = sum(t.values())
        if best is None or t["total"] < best["total"]:
            best = t
    audio_s = conv.duration
    print(f"{audio_s / 60:.0f} min of conversation, {args.threads} torch thread(s), best of {args.repeat}:")
    for k, v in best.items():
        print(f"  {k:8s} {v:7.3f} s")
    print(f"throughput: {audio_s / best['total']:.0f}x real time (target >= 1000x); "
          f"TurnNat units {score.n_units}, DialogNLL {score.dialog_nll:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

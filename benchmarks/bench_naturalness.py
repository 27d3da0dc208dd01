"""Naturalness scoring speed given voice activity: every scorer on one hour of conversation.

    .venv/bin/python benchmarks/bench_naturalness.py [--swb /tmp/swb] [--minutes 60] [--repeat 5]

The hour is Switchboard validation conversations laid end to end (`bench_scoring.long_conversation`).
Timed after loading each scorer's model: the whole score of that hour. Target for the default
scorer: >= 10,000x real time (an hour in <= 0.36 s) on the 2-core machine. The hour keeps
its MS-98 words, so timing-hazard-words is timed with its word cues (and once more without words);
the words themselves (ASR of a call) are not part of the time. "first" is the first of the runs:
the words' spellings are cached as they are read (judge.turn_end), so later runs of the same hour
are faster than a new hour.
"""

from __future__ import annotations

import argparse
import sys
import time

from bench_scoring import long_conversation
from naturalness.scorers import DEFAULT_SCORER, SCORERS, load_scorer
from turntaking.activity import Conversation


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--swb", default="/tmp/swb")
    ap.add_argument("--minutes", type=float, default=60.0)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--scorers", nargs="+", default=list(SCORERS), choices=SCORERS)
    args = ap.parse_args(argv)

    import torch

    torch.set_num_threads(1)  # turnnat-va's GRU: one thread is fastest here
    conv = long_conversation(args.swb, args.minutes)
    print(f"{conv.duration / 60:.0f} min of conversation, best and median of {args.repeat} runs")
    without_words = Conversation(conv.duration, conv.activity, None, source=conv.source)
    for name in args.scorers:
        scorer = load_scorer(name)
        # A scorer that reads words (timing-hazard-words) is timed with the hour's words and without.
        inputs = [("", conv)] + ([(" (no words)", without_words)] if getattr(scorer, "reads_words", False) else [])
        for label, dialogue in inputs:
            times = []
            for _ in range(max(args.repeat, 1)):
                t0 = time.perf_counter()
                score = scorer.score(dialogue)
                times.append(time.perf_counter() - t0)
            first = times[0]
            times.sort()
            best, median = times[0], times[len(times) // 2]
            target = "  (target >= 10000x)" if name == DEFAULT_SCORER else ""
            print(f"  {name + label:30s} first {first:6.3f} s ({conv.duration / first:7.0f}x real time), best "
                  f"{best:6.3f} s ({conv.duration / best:7.0f}x), median {median:6.3f} s "
                  f"({conv.duration / median:7.0f}x){target}; naturalness {score.naturalness:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Issue 24, on *training* pairs only: how each scorer ranks the cut-out answer as the pause the cut
leaves is drawn from ranges wider and narrower than either generator's.

    PYTHONPATH=.:benchmarks .venv/bin/python benchmarks/cut_pause_sweep.py [--swb /tmp/swb]

The crosscheck generator (annotation/crosscheck_pairs.py) makes "hold instead of shift, the answer
cut out" pairs from training conversations 600-999 (seeds 1 and 2, 60 pairs each), once per range
of the pause left behind (its `kept_pause_s`, 0.3-2.0 s by default), and once in the mute form for
comparison. Each pair is scored by the default (`timing-hazard-words`, the pairs keep their words),
by `timing-hazard` (voice activity only), by the issue's context-free duration likelihood (mean NLL
per event, histograms of training conversations 0-599) and by the issue's naive rule (seconds of
silence over 0.7 s plus seconds of overlap, per second). Printed: pair accuracy % per range, with
its Wilson 95 % interval for the default.

Why: the issue's hidden generator is not known; the pause it leaves is the one parameter of this
edit that decides what voice activity can see. The sweep says where each scorer stands whatever
that pause is, instead of at one generator's range.
"""

from __future__ import annotations

import argparse
from dataclasses import replace

import numpy as np
from tqdm import tqdm

from annotation.crosscheck_pairs import CrosscheckParams, build_crosscheck_pairs
from naturalness.scorers import load_scorer
from turnnat_validation import EDGES_S, clip_events, fit_duration_likelihood
from turntaking.events import classify_silences, inter_pausal_units, overlap_events
from turntaking.intervals import wilson_interval
from turntaking.switchboard import conversation_ids, load_conversation

PAUSE_RANGES_S = ((0.0, 0.15), (0.15, 0.5), (0.5, 1.0), (1.0, 2.0), (2.0, 4.0), (0.3, 2.0))
SEEDS = (1, 2)
PER_SEED = 60


def mean_event_nll(hist: dict[str, np.ndarray]):
    """The issue's context-free duration likelihood, mean NLL per event (as benchmarks/turnnat_validation.py)."""
    total = sum(h.sum() for h in hist.values())

    def score(conv) -> float:
        return float(np.mean([
            -np.log((hist[k].sum() + 0.5) / (total + 0.5 * len(hist)))
            - np.log((hist[k][np.searchsorted(EDGES_S, d)] + 0.5) / (hist[k].sum() + 0.5 * len(hist[k])))
            for k, d in clip_events(conv)]))

    return score


def naive_rule(conv) -> float:
    """Seconds of mutual silence longer than 0.7 s plus seconds of overlap, per second."""
    ipus = tuple(inter_pausal_units(conv.activity[k], 0.2) for k in (0, 1))
    pauses, gaps = classify_silences(ipus, conv.duration)
    long_silence = sum(e.duration for e in [*pauses, *gaps] if e.duration > 0.7)
    return (long_silence + sum(e.duration for e in overlap_events(ipus))) / conv.duration


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--swb", default="/tmp/swb")
    args = ap.parse_args(argv)
    train = conversation_ids(args.swb, split="train")
    hist = fit_duration_likelihood(load_conversation(args.swb, i)
                                   for i in tqdm(train[:600], desc="duration histograms", unit="conv"))
    conversations = [load_conversation(args.swb, i) for i in tqdm(train[600:1000], desc="pair sources", unit="conv")]
    default = load_scorer("timing-hazard-words")
    timing = load_scorer("timing-hazard")
    scorers = {  # lower = more natural, for each
        "timing-hazard-words (default)": lambda conv: default.score(conv).dialog_nll,
        "timing-hazard": lambda conv: timing.score(conv).dialog_nll,
        "duration likelihood /event": mean_event_nll(hist),
        "naive rule /s": naive_rule,
    }
    settings = [(f"excise, pause {lo:g}-{hi:g} s", "excise", (lo, hi)) for lo, hi in PAUSE_RANGES_S]
    settings.append(("mute (the answer silenced)", "mute", CrosscheckParams().kept_pause_s))
    print("| pause left | pairs | " + " | ".join(scorers) + " |\n|---|---|" + "---|" * len(scorers))
    for name, form, pause in tqdm(settings, desc="pause ranges", unit="range"):
        params = replace(CrosscheckParams(), kept_pause_s=pause)
        pairs = [p for seed in SEEDS for p in build_crosscheck_pairs(
            conversations, PER_SEED, seed, form, params, types=("hold_instead_of_shift",))]
        cells = []
        for label, score in scorers.items():
            right = sum(score(p.natural) < score(p.perturbed) for p in pairs)
            low, high = wilson_interval(right, len(pairs))
            cells.append(f"{100 * right / len(pairs):.1f}" + (f" [{100 * low:.1f}-{100 * high:.1f}]"
                                                             if label.endswith("(default)") else ""))
        tqdm.write(f"| {name} | {len(pairs)} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

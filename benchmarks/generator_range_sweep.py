"""On *training* pairs only: how each scorer ranks each type as the edit's main parameter
is drawn from ranges wider and narrower than either generator's.

    PYTHONPATH=.:benchmarks .venv/bin/python benchmarks/generator_range_sweep.py [--swb /tmp/swb]

The crosscheck generator (annotation/crosscheck_pairs.py) makes pairs of one type from training
conversations 600-999 (seeds 1 and 2, 60 pairs each), once per range of one of its parameters
(`SETTINGS`: the pause a cut-out answer leaves, 0.3-2.0 s by default; the delay of a late answer;
the advance of an early one; the silences around an inserted turn and the pause it fills; the count
of extra backchannels), the others at their defaults. Each pair is scored by the default
(`timing-hazard-words`, the pairs keep their words), by `timing-hazard` (voice activity only), by
the reference table's context-free duration likelihood (mean NLL per event, histograms of training
conversations 0-599) and by its naive rule (silences over 0.7 s and overlaps per second, counted or
timed: turnnat_validation.naive_rule_value). Printed: pair accuracy % per range; for the default
also its Wilson 95 % interval over pairs [..] and its 95 % bootstrap interval over the source
conversations (..), the unit sampled. The timing model and the first-words table were fitted on
training conversations that include these; nothing is chosen on this run.

Why: the generator of the hidden reference pairs is not known, nor its ranges; the sweep says where
each scorer stands across them, instead of at one generator's range.
"""

from __future__ import annotations

import argparse
from dataclasses import replace

import numpy as np
from tqdm import tqdm

from annotation.crosscheck_pairs import CrosscheckParams, build_crosscheck_pairs
from naturalness.scorers import load_scorer
from turnnat_validation import clip_events, event_nlls, fit_duration_likelihood, naive_rule_value
from turntaking.intervals import proportion_interval, wilson_interval
from turntaking.switchboard import conversation_ids, load_conversation

HOLD = "hold_instead_of_shift"
# (type, form, parameter, range): the generator's default range is in each group
SETTINGS = (
    *((HOLD, "excise", "kept_pause_s", r) for r in ((0.0, 0.15), (0.15, 0.5), (0.5, 1.0), (1.0, 2.0), (2.0, 4.0),
                                                     (0.3, 2.0))),
    (HOLD, "mute", "kept_pause_s", (0.3, 2.0)),
    *(("late_response", "excise", "late_s", r) for r in ((0.3, 0.7), (0.7, 1.0), (1.0, 2.5), (2.5, 5.0))),
    *(("early_entry", "excise", "early_s", r) for r in ((0.3, 1.0), (1.0, 3.0))),
    *(("shift_instead_of_hold", "excise", "inserted_silence_s", r) for r in ((0.0, 0.15), (0.15, 0.7), (0.7, 1.5))),
    *(("shift_instead_of_hold", "excise", "hold_pause_s", r) for r in ((0.2, 0.5), (0.5, 1.5))),
    *(("excessive_backchannel", "excise", "backchannels", r) for r in ((1, 1), (2, 4))),
)
SEEDS = (1, 2)
PER_SEED = 60


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
        "duration likelihood /event": lambda conv: float(np.mean(event_nlls(hist, conv))),
        "naive rule counted /s": lambda conv: naive_rule_value(clip_events(conv), conv.duration, timed=False),
        "naive rule timed /s": lambda conv: naive_rule_value(clip_events(conv), conv.duration, timed=True),
    }
    print("| type | form | parameter | range | pairs | " + " | ".join(scorers) + " |\n|---|---|---|---|---|"
          + "---|" * len(scorers))
    for kind, form, name, bounds in tqdm(SETTINGS, desc="settings", unit="setting"):
        params = replace(CrosscheckParams(), **{name: bounds})
        pairs = [p for seed in SEEDS for p in build_crosscheck_pairs(conversations, PER_SEED, seed, form, params,
                                                                     types=(kind,))]
        cells = []
        for label, score in scorers.items():
            outcomes = [(p.source, score(p.natural) < score(p.perturbed)) for p in pairs]
            right = sum(ok for _, ok in outcomes)
            cell = f"{100 * right / len(pairs):.1f}"
            if label.endswith("(default)"):
                sources = sorted({source for source, _ in outcomes})
                low, high = wilson_interval(right, len(pairs))
                b_low, b_high = proportion_interval([sum(ok for s, ok in outcomes if s == source) for source in sources],
                                                    [sum(1 for s, _ in outcomes if s == source) for source in sources])
                cell += f" [{100 * low:.1f}-{100 * high:.1f}] ({100 * b_low:.1f}-{100 * b_high:.1f})"
            cells.append(cell)
        marker = " (default)" if getattr(CrosscheckParams(), name) == bounds else ""
        tqdm.write(f"| {kind} | {form} | {name} | {bounds[0]:g}-{bounds[1]:g}{marker} | {len(pairs)} | "
                   + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

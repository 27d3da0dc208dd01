"""How much voice activity and words tell a turn end from a pause in Switchboard (development check).

    .venv/bin/python benchmarks/turn_end_cues.py [--swb /tmp/swb] [--max-conversations N]

Why this exists: a TurnNat scorer finds a late response (TurnNat's 1.2-2 s of extra silence) or a
missing one unnatural only if, at the end of the speaker's utterance, it expects the other speaker
to answer soon. This measures what the inputs a judge can be trained on here carry about that.
Clean transitions are the mutual silences of the VAP criterion (one active speaker in the 1 s
before and after, IPUs at 0.2 s; `annotation.perturbations.clean_transitions`): a shift when the
speaker changes, a hold when not. Printed, on the validation conversations:
- the share of shifts and holds among clean transitions, and of silences longer than 1.0/1.4/2.0 s;
- how well the last 1, 2 or 3 words of the utterance before the silence predict a shift (ROC-AUC),
  with P(shift | words) estimated on the training conversations (counts, each longer context
  smoothed towards the shorter one), and how often that estimate passes 0.5 at real shifts.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict

import numpy as np
from sklearn.metrics import roc_auc_score

from annotation.perturbations import clean_transitions
from judge.words import normalize_word
from turntaking.events import inter_pausal_units
from turntaking.switchboard import conversation_ids, load_conversation

MAX_CONTEXT = 3
SMOOTHING = 5.0  # pseudo-counts pulling a context's estimate towards its shorter context's


def transitions(root: str, split: str, limit: int):
    """(last MAX_CONTEXT words before the silence, is_shift, silence_s) of every clean transition."""
    ids = conversation_ids(root, split=split)
    for conv_id in ids[:limit] if limit else ids:
        conv = load_conversation(root, conv_id)
        ipus = tuple(inter_pausal_units(conv.activity[k], 0.2) for k in range(2))
        words = [sorted((w for w in side if normalize_word(w.text)), key=lambda w: w.end) for side in conv.words]
        for t in clean_transitions(ipus, conv.duration, 1.0):
            said = [normalize_word(w.text) for w in words[t.prev] if w.end <= t.start + 1e-6]
            if len(said) >= MAX_CONTEXT:
                yield tuple(said[-MAX_CONTEXT:]), t.prev != t.next, t.end - t.start


def shift_probability(train, k: int):
    """P(shift | last k words), interpolated from 1 to k words of context."""
    base = np.mean([shift for _, shift, _ in train])
    counts = defaultdict(lambda: [0, 0])
    for words, shift, _ in train:
        for j in range(1, k + 1):
            counts[words[-j:]][0] += shift
            counts[words[-j:]][1] += 1

    def estimate(words) -> float:
        p = base
        for j in range(1, k + 1):
            shifts, n = counts.get(words[-j:], (0, 0))
            p = (shifts + SMOOTHING * p) / (n + SMOOTHING)
        return p

    return estimate


def roc_auc(positive, negative) -> float:
    """P(a shift scores above a hold), ties counting half: ROC-AUC with shifts as the positives."""
    positive, negative = np.asarray(positive, float), np.asarray(negative, float)
    labels = np.r_[np.ones(len(positive), bool), np.zeros(len(negative), bool)]
    return float(roc_auc_score(labels, np.r_[positive, negative]))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--swb", default="/tmp/swb")
    ap.add_argument("--max-conversations", type=int, default=0, help="first N of each list (0: all)")
    args = ap.parse_args(argv)
    train = list(transitions(args.swb, "train", args.max_conversations))
    val = list(transitions(args.swb, "val", args.max_conversations))
    is_shift = np.array([shift for _, shift, _ in val])
    silence = np.array([s for _, _, s in val])
    print(f"clean transitions: {len(train)} train, {len(val)} val; val shifts {is_shift.mean():.1%}, holds {1 - is_shift.mean():.1%}")
    for name, kind in (("shifts", is_shift), ("holds", ~is_shift)):
        longer = ", ".join(f"> {x:g} s {np.mean(silence[kind] > x):.1%}" for x in (1.0, 1.4, 2.0))
        print(f"  silence at {name}: median {np.median(silence[kind]):.2f} s; {longer}")
    for k in range(1, MAX_CONTEXT + 1):
        estimate = shift_probability(train, k)
        p = np.array([estimate(words) for words, _, _ in val])
        print(f"last {k} word(s): ROC-AUC shift vs hold {roc_auc(p[is_shift], p[~is_shift]):.3f}; "
              f"P(shift | words) at real shifts: median {np.median(p[is_shift]):.2f}, > 0.5 for {np.mean(p[is_shift] > 0.5):.1%}; "
              f"at holds: median {np.median(p[~is_shift]):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

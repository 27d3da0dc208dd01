"""Development-time probe of "hold instead of shift, the answer cut out" on *training* pairs: what
voice activity (and the words) can tell, and which score variants were tried.

    .venv/bin/python benchmarks/cut_out_answer_probe.py [--swb /tmp/swb] [--out /tmp/cutout_train]

1. Pairs of training conversations (built once, reused when present): the builder
   (`annotation build-pairs SWB --split train --per-type 60 --seed 1`, both hold removals) and the
   crosscheck generator (`annotation build-crosscheck-pairs ... --seed 1` and `--seed 2`, both).
2. Silences at clean regions (VAP criterion, annotation.crosscheck_pairs.clean_regions) of 300
   training conversations: how long people pause within a turn and between turns, and how often
   a clean silence is a hold.
3. Score variants on every training pair set: timing-hazard with other flip costs and without
   its peak term, the context-free duration likelihood (benchmarks/turnnat_validation.py), and
   timing-hazard plus a charge for long within-speaker pauses.
4. Words: P(shift | the last two words before a clean silence), counted on 800 training
   conversations, its ROC-AUC on the clean silences of training conversations 1000-1281 (held
   out of the counts), and a lexical mismatch charge (a hold after words that predict a shift, a
   shift after words that predict a hold) added to timing-hazard, on the builder's pairs (whose
   clips keep their words).
5. A learned ranker, to see whether what tells the cut-out answer carries over between generators:
   a linear score over timing-hazard's two rates and the clip's events per second in duration bins
   (pauses, gaps, overlaps, IPUs), fitted by pairwise logistic regression (each type weighted
   alike, L2 0.01) on one generator's pairs and tested on the other's, and fitted on seed 1 of
   both and tested on seed 2 of the crosscheck generator.
Nothing here reads the validation split.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
from scipy.optimize import minimize
from sklearn.metrics import roc_auc_score

from annotation.crosscheck_pairs import CrosscheckParams, clean_regions, conversation_frames
from naturalness.pairs import read_pairs_manifest
from naturalness.timing_hazard.context import ipu_frames
from naturalness.timing_hazard.model_file import load_timing_model
from naturalness.timing_hazard.scorer import TimingParams, score_frames
from turnnat_validation import TYPES, clip_events, duration_likelihood, fit_duration_likelihood
from turntaking.activity import load_conversation_json
from turntaking.events import classify_silences, inter_pausal_units
from turntaking.switchboard import conversation_ids, load_conversation

ROOT = Path(__file__).resolve().parent.parent
SETS = [("builder", "excise", 1), ("builder", "mute", 1), ("crosscheck", "excise", 1), ("crosscheck", "mute", 1),
        ("crosscheck", "excise", 2), ("crosscheck", "mute", 2)]
BUILD = {"builder": "build-pairs", "crosscheck": "build-crosscheck-pairs"}


def build(swb: str, out: Path) -> dict[str, Path]:
    manifests = {}
    for generator, form, seed in SETS:
        folder = out / f"{generator}-{form}-s{seed}"
        if not (folder / "manifest.jsonl").is_file():
            subprocess.run([sys.executable, "-m", "annotation", BUILD[generator], swb, "--split", "train", "--out",
                            str(folder), "--per-type", "60", "--seed", str(seed), "--hold-removal", form],
                           cwd=ROOT, check=True)
        manifests[folder.name] = folder / "manifest.jsonl"
    return manifests


def silences(swb: str) -> None:
    p = CrosscheckParams()
    hold, shift = [], []
    for i in conversation_ids(swb, split="train")[:300]:
        for r in clean_regions(conversation_frames(load_conversation(swb, i), p), 100):
            (hold if r.before == r.after else shift).append((r.end - r.start) / 100)
    print("clean silences of 300 training conversations (>= 0.2 s):")
    for name, x in (("hold pauses", hold), ("shift gaps", shift)):
        x = np.array(x)
        x = x[x >= 0.2]
        print(f"  {name:12s} {len(x):6d}  median {np.median(x):.2f} s  "
              + "  ".join(f"P(> {t} s) {np.mean(x > t):.2f}" for t in (0.5, 0.7, 1.0, 1.5)))
    n_hold, n_shift = sum(d >= 0.2 for d in hold), sum(d >= 0.2 for d in shift)
    print(f"  share of holds {n_hold / (n_hold + n_shift):.2f}")


# -- words: P(shift | last two words) --------------------------------------------------------------


def word_samples(swb: str, ids) -> list[tuple[tuple[str, ...], int]]:
    p = CrosscheckParams()
    out = []
    for i in ids:
        conv = load_conversation(swb, i)
        for r in clean_regions(conversation_frames(conv, p), 100):
            words = tuple(w.text for w in conv.words[r.before] if w.end <= r.start / 100 + 0.02)[-2:]
            if words:
                out.append((words, int(r.before != r.after)))
    return out


class TurnEndWords:
    """P(shift | last word, last two words), each shrunk towards the coarser one (weight 20)."""

    def __init__(self, samples):
        self.prior = float(np.mean([y for _, y in samples]))
        self.counts = Counter()
        for words, y in samples:
            for key in (words[-1:], words):
                self.counts[key, "n"] += 1
                self.counts[key, "shift"] += y

    def p_shift(self, words, weight: float = 20.0) -> float:
        p = self.prior
        for key in (tuple(words[-1:]), tuple(words)):
            p = (self.counts[key, "shift"] + weight * p) / (self.counts[key, "n"] + weight)
        return p

    def mismatch(self, conv) -> float:
        """Sum over silences: log-odds for a shift above the base rate where the speaker went on,
        below it where the other took the turn."""
        base = np.log(self.prior / (1 - self.prior))
        ipus = tuple(inter_pausal_units(conv.activity[k], 0.2) for k in (0, 1))
        pauses, gaps = classify_silences(ipus, conv.duration)
        total = 0.0
        for event, shift in [(e, False) for e in pauses] + [(e, True) for e in gaps]:
            before = 1 - event.speaker if shift else event.speaker
            words = [w.text for w in conv.words[before] if w.end <= event.start + 0.02][-2:]
            if words:
                p = self.p_shift(words)
                llr = np.log(p / (1 - p)) - base
                total += max(0.0, -llr) if shift else max(0.0, llr)
        return total


# -- variants ------------------------------------------------------------------------------------


def pause_excess(conv, over_s: float = 0.5) -> float:
    return sum(max(0.0, d - over_s) for kind, d in clip_events(conv) if kind == "pause")


def long_pauses_per_s(conv, over_s: float = 0.7) -> float:
    return sum(d > over_s for kind, d in clip_events(conv) if kind == "pause") / conv.duration


# -- a learned ranker over voice-activity features ---------------------------------------------------

RANKER_BINS_S = {"pause": [0.2, 0.5, 0.7, 1.0, 1.5, 99], "gap": [0, 0.2, 0.5, 0.7, 1.0, 1.5, 99],
                 "overlap": [0, 0.3, 1.0, 99], "ipu": [0, 0.5, 1, 2, 4, 99]}


def ranker_features(conv, model) -> np.ndarray:
    score = score_frames(ipu_frames(conv), model)
    events = clip_events(conv)
    out = [score.mean_rate, score.peak_rate]
    for kind, edges in RANKER_BINS_S.items():
        out += list(np.histogram([d for k, d in events if k == kind], bins=edges)[0] / conv.duration)
    return np.array(out)


def fit_ranker(rows, l2: float = 0.01) -> np.ndarray:
    """Weights w with w . (features(perturbed) - features(natural)) > 0 for as many pairs as it can."""
    diffs = np.array([p - n for _, n, p in rows])
    scale = diffs.std(axis=0) + 1e-9
    types = [t for t, _, _ in rows]
    weight = np.array([1.0 / types.count(t) for t in types])

    def loss(w):
        return float((weight * np.logaddexp(0, -(diffs / scale) @ w)).sum() / weight.sum() + l2 * (w ** 2).sum())

    return minimize(loss, np.full(diffs.shape[1], 0.01), method="L-BFGS-B").x / scale


def accuracy_row(name: str, results: dict[str, list[tuple[str, float, float]]]) -> str:
    cells = []
    for rows in results.values():
        by_type = {t: np.mean([p > n for tt, n, p in rows if tt == t]) for t in TYPES}
        nat, per = np.array([n for _, n, _ in rows]), np.array([p for _, _, p in rows])
        c_index = float((per[:, None] > nat[None, :]).mean())
        cells.append(f"{100 * np.mean([p > n for _, n, p in rows]):.1f} / hold {100 * by_type['hold_instead_of_shift']:.0f}"
                     f" / shift {100 * by_type['shift_instead_of_hold']:.0f} / min {100 * min(by_type.values()):.0f}"
                     f" / C {c_index:.3f}")
    return f"| {name} | " + " | ".join(cells) + " |"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--swb", default="/tmp/swb")
    ap.add_argument("--out", default="/tmp/cutout_train")
    args = ap.parse_args(argv)
    manifests = build(args.swb, Path(args.out))
    silences(args.swb)

    model = load_timing_model()
    train = conversation_ids(args.swb, split="train")
    hist = fit_duration_likelihood(load_conversation(args.swb, i) for i in train[:600])
    per_event, per_second = duration_likelihood(hist, False), duration_likelihood(hist, True)
    words = TurnEndWords(word_samples(args.swb, train[:800]))
    held_out = word_samples(args.swb, train[1000:])
    auc = roc_auc_score([y for _, y in held_out], [words.p_shift(w) for w, _ in held_out])
    print(f"P(shift | last two words): ROC-AUC {auc:.3f} on {len(held_out)} clean silences of held-out training "
          f"conversations (base rate of shifts {words.prior:.3f})")

    def hazard(params):
        return lambda conv, path: score_frames(ipu_frames(conv), model, params).nll_rate

    default = TimingParams()
    variants = {
        "timing-hazard (flip 3.5, 6 s, weight 2, tau 0.5)": hazard(default),
        "  flip cost 2.0": hazard(TimingParams(flip_cost_nats=2.0)),
        "  flip cost 5.0": hazard(TimingParams(flip_cost_nats=5.0)),
        "  no peak term": hazard(TimingParams(peak_weight=0.0)),
        "duration likelihood, mean NLL per event": lambda conv, path: per_event(path).dialog_nll,
        "duration likelihood, NLL per second": lambda conv, path: per_second(path).dialog_nll,
    }
    for weight in (0.5, 2.0, 8.0):
        variants[f"timing-hazard + {weight:g} x pause excess over 0.5 s"] = (
            lambda w: lambda conv, path: hazard(default)(conv, path) + w * pause_excess(conv))(weight)
    for weight in (2.0, 8.0):
        variants[f"timing-hazard + {weight:g} x pauses > 0.7 s per s"] = (
            lambda w: lambda conv, path: hazard(default)(conv, path) + w * long_pauses_per_s(conv))(weight)
    lexical = {f"timing-hazard + {weight:g} x lexical mismatch / 20 s (words)": (
        lambda w: lambda conv, path: hazard(default)(conv, path) + w * words.mismatch(conv) / 20)(weight)
        for weight in (2.0, 8.0, 16.0)}
    lexical["lexical mismatch alone (words)"] = lambda conv, path: words.mismatch(conv)

    results = {name: {} for name in [*variants, *lexical]}
    for set_name, manifest in manifests.items():
        entries = read_pairs_manifest(manifest)
        clips = {e.pair_id: (load_conversation_json(e.natural), load_conversation_json(e.perturbed)) for e in entries}
        names = [*variants] + ([*lexical] if set_name.startswith("builder") else [])
        for name in names:
            fn = {**variants, **lexical}[name]
            results[name][set_name] = [(e.type, fn(clips[e.pair_id][0], e.natural), fn(clips[e.pair_id][1], e.perturbed))
                                       for e in entries]
    print("\nPair accuracy % (hold = hold instead of shift, shift = shift instead of hold, min = the worst type)")
    print("| version | " + " | ".join(manifests) + " |\n|---|" + "---|" * len(manifests))
    for name in variants:
        print(accuracy_row(name, results[name]))
    print("\n| words (builder pairs keep them) | " + " | ".join(n for n in manifests if n.startswith("builder"))
          + " |\n|---|---|---|")
    for name in lexical:
        print(accuracy_row(name, results[name]))

    features = {}
    for set_name, manifest in manifests.items():
        features[set_name] = [(e.type, ranker_features(load_conversation_json(e.natural), model),
                               ranker_features(load_conversation_json(e.perturbed), model))
                              for e in read_pairs_manifest(manifest)]
    print("\nA learned linear ranker over voice-activity features (pair accuracy %)")
    splits = {"builder -> crosscheck": (lambda n: n.startswith("builder"), lambda n: n.startswith("crosscheck")),
              "crosscheck -> builder": (lambda n: n.startswith("crosscheck"), lambda n: n.startswith("builder")),
              "seed 1 of both -> crosscheck seed 2": (lambda n: n.endswith("s1"), lambda n: n.endswith("s2"))}
    print("| fitted on -> tested on | " + " | ".join(manifests) + " |\n|---|" + "---|" * len(manifests))
    for name, (fit_on, test_on) in splits.items():
        w = fit_ranker([row for n, rows in features.items() if fit_on(n) for row in rows])
        tested = {n: [(t, float(nat @ w), float(per @ w)) for t, nat, per in rows] if test_on(n) else None
                  for n, rows in features.items()}
        cells = [accuracy_row("", {n: rows}).split("|")[2].strip() if rows else "-" for n, rows in tested.items()]
        print(f"| {name} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

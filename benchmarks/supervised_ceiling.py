"""How far timing and words can go on the generators' pairs: pairwise classifiers trained on the
pairs themselves, an optimistic ceiling for any naturalness score of the same inputs.

    PYTHONPATH=.:benchmarks .venv/bin/python benchmarks/supervised_ceiling.py GENERATOR=MANIFEST ...
        [--silenced GENERATOR=MANIFEST ...] [--test GENERATOR-FORM=MANIFEST ...] [--out TABLE]

The positional sets are pairs of *training* conversations in the excise form, every type, e.g.
`annotation build-pairs /tmp/swb --split train --seed 1 --hold-removal excise --per-type 120 --out
OUT` (`build-crosscheck-pairs`, `benchmarks/blind_pairs.py --swb` likewise); several sets may share a
generator (seeds). `--silenced` adds the silenced answers of mute-form training sets. Without
`--test` the classifiers are cross-validated on the training pairs; with it they are fitted on
them and score the test sets (validation pairs: one look, a measurement), once on every generator's
training pairs and once on the other generators' only.

A naturalness score must rank every type with one number per clip, without knowing which edit a
pair holds or where. The classifier here is given far more: it learns from the generators' own
pairs which differences of clip features mark the perturbed clip, one type at a time as well as for
all five together. It reads each clip on its own (features of the clip, not of the pair), so what it
reaches is what these clip features can tell; its accuracy on held-out source conversations bounds
from above what a score of the same inputs can be expected to reach on those pairs.

Features of a clip (IPUs joined across 0.2 s, as every scorer here reads them; a few frames of
silence at a splice are invisible to them):
- the scores: `timing-hazard-words` (rate) and `timing-hazard` on voice activity alone;
- events per second: pauses (holds), gaps (shifts), overlaps, backchannels, IPUs, floor transfers;
  pause and gap durations (mean, longest, how many over 0.7 s and 1 s); the longest time one speaker
  holds the floor (between floor transfers) and the longest time a speaker is silent; each speaker's
  share of speech;
- words before each silence: the turn-end model's logit P(shift | last words, question), at pauses
  (largest, mean, summed excess over the training base rate) and at gaps (smallest, mean, summed
  shortfall);
- words after each silence: the first-words table's logit P(answers | first words), at starts
  that go on (largest, mean, summed excess) and at starts that answer (smallest, mean, summed
  shortfall); and at each pause the two together (largest sum).
The turn-end model, the first-words table and the timing model were fitted on training conversations
that include these pairs' sources: that too favours the classifier, as a ceiling should.

Two classifiers on the feature difference (perturbed - natural, and the reverse with the other
label, so the decision is antisymmetric): logistic regression on standardised differences and
gradient-boosted trees (scikit-learn's HistGradientBoostingClassifier). Held out by source
conversation (GroupKFold, 5 folds over every set) and by generator (trained on the others).
Pair accuracy % [Wilson 95 % over pairs]; ties count half.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GroupKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from tqdm import tqdm

from judge.turn_end import logit
from naturalness.first_words import ipu_starts, scored_starts
from naturalness.pairs import read_pairs_manifest
from naturalness.timing_hazard.scorer import TimingHazardScorer
from naturalness.timing_hazard.word_scorer import TimingHazardWordsScorer
from naturalness.word_cue import word_cues
from speech.recordings import load_recording
from turntaking.events import detect_events
from turntaking.intervals import c_index, wilson_interval
from turntaking.jsonfiles import JsonFileError

TYPES = ("late_response", "early_entry", "hold_instead_of_shift", "shift_instead_of_hold", "excessive_backchannel")
# The features that read words; `--voice-activity-only` leaves them out, and then the default is
# what scores a dialogue without words: timing-hazard.
WORD_FEATURES = ("timing_hazard_words", "shift_words_", "answer_words_", "pause_both_sides_")
SILENCED = "answer_silenced"  # hold instead of shift in the mute form, where training sets of both forms are pooled


def _logit(p: float) -> float:
    return logit(p, clip=1e-4)  # the cues' clip (naturalness.turn_cue)


def _stats(values, prefix: str, largest: bool, base: float = 0.0) -> dict[str, float]:
    """Largest (or smallest), mean and summed excess over `base` (or shortfall below it)."""
    v = np.asarray(values, dtype=float)
    if v.size == 0:
        return {f"{prefix}_extreme": base, f"{prefix}_mean": base, f"{prefix}_excess": 0.0}
    excess = np.clip(v - base, 0, None) if largest else np.clip(base - v, 0, None)
    return {f"{prefix}_extreme": float(v.max() if largest else v.min()), f"{prefix}_mean": float(v.mean()),
            f"{prefix}_excess": float(excess.sum())}


def clip_features(path: Path, words_scorer: TimingHazardWordsScorer, va_scorer: TimingHazardScorer) -> dict[str, float]:
    """The clip's features by name (the module's docstring lists them); a clip without words gets
    the word features' neutral values (no pauses or starts with words)."""
    conv = load_recording(path, words=True)
    dur = max(conv.duration, 1e-6)
    ev = detect_events(conv, words_scorer.settings.events)
    f = {"timing_hazard_words": words_scorer.score(conv).dialog_nll,
         "timing_hazard": va_scorer.score(replace(conv, words=None)).dialog_nll}
    pauses = [e.duration for e in ev.pauses]
    gaps = [e.duration for e in ev.gaps]
    for name, n in (("pauses", len(pauses)), ("gaps", len(gaps)), ("overlaps", len(ev.overlaps)),
                    ("backchannels", sum(map(len, ev.backchannels))), ("ipus", sum(map(len, ev.ipus)))):
        f[f"{name}_per_s"] = n / dur
    for name, d in (("pause", pauses), ("gap", gaps)):
        d = np.asarray(d)
        f[f"{name}_mean_s"] = float(d.mean()) if d.size else 0.0
        f[f"{name}_longest_s"] = float(d.max()) if d.size else 0.0
        f[f"{name}s_over_0.7_per_s"] = float((d > 0.7).sum()) / dur
        f[f"{name}s_over_1_per_s"] = float((d > 1.0).sum()) / dur
    # floor holdings: between floor transfers (backchannels transfer nothing)
    marks = [0.0] + [t.next_start for t in ev.floor_transfers] + [conv.duration]
    f["longest_floor_s"] = float(np.max(np.diff(marks)))
    f["floor_transfers_per_s"] = len(ev.floor_transfers) / dur
    silent = []
    for k in (0, 1):
        edges = [0.0] + [x for s, e in ev.ipus[k] for x in (s, e)] + [conv.duration]
        silent.append(max(edges[i + 1] - edges[i] for i in range(0, len(edges), 2)))
    f["longest_silence_s"] = float(max(silent))
    share = [s / dur for s in conv.speech_seconds()]
    f["speech_share_low"], f["speech_share_high"] = min(share), max(share)

    # words before each silence
    turn_end = words_scorer.turn_end
    base = _logit(turn_end.base_rate)
    cues = {(c.speaker, round(c.time_s, 3)): _logit(c.p_complete)
            for c in word_cues(conv, turn_end, True, words_scorer.settings.events, ev) or []}
    at_pauses = [cues.get((e.speaker, round(e.start, 3))) for e in ev.pauses]
    at_gaps = [cues.get((1 - e.speaker, round(e.start, 3))) for e in ev.gaps]
    f |= _stats([x for x in at_pauses if x is not None], "shift_words_at_pauses", True, base)
    f |= _stats([x for x in at_gaps if x is not None], "shift_words_at_gaps", False, base)
    # words after each silence
    table = words_scorer.first_words
    fbase = _logit(table.base_rate)
    starts = scored_starts(ipu_starts(conv, words_scorer.settings.events, ev))
    answer = {round(s.time_s, 3): _logit(table.p_answers(s.content_tokens)) for s in starts}
    f |= _stats([answer[round(s.time_s, 3)] for s in starts if not s.answers], "answer_words_going_on", True, fbase)
    f |= _stats([answer[round(s.time_s, 3)] for s in starts if s.answers], "answer_words_answering", False, fbase)
    both = [x + answer[round(e.end, 3)] - fbase - base for e, x in zip(ev.pauses, at_pauses)
            if x is not None and round(e.end, 3) in answer]
    f["pause_both_sides_largest"] = float(max(both)) if both else 0.0
    return f


def pair_features(sets: list[tuple[str, Path]], scorers: tuple[TimingHazardWordsScorer, TimingHazardScorer],
                  only_type: str | None = None, voice_activity_only: bool = False):
    """Feature rows of every pair of the sets (only `only_type`'s pairs where given), without the
    word features where `voice_activity_only`."""
    rows = []
    entries = [(g, e) for g, m in sets for e in read_pairs_manifest(m) if only_type in (None, e.type)]
    cache: dict[Path, dict[str, float]] = {}
    for generator, e in tqdm(entries, desc="clip features", unit="pair"):
        for p in (e.natural, e.perturbed):
            if p not in cache:
                cache[p] = clip_features(p, *scorers)
        rows.append((generator, e.type, e.source or str(e.natural), cache[e.natural], cache[e.perturbed], e.natural))
    if not rows:
        raise ValueError(f"no pairs in {', '.join(str(m) for _, m in sets)}")
    names = sorted(n for n in rows[0][3] if not (voice_activity_only and n.startswith(WORD_FEATURES)))
    nat = np.array([[r[3][n] for n in names] for r in rows])
    per = np.array([[r[4][n] for n in names] for r in rows])
    meta = [(r[0], r[1], r[2], r[5]) for r in rows]
    return names, nat, per, meta


def classifiers():
    return {"logistic": lambda: make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=2000)),
            "boosted trees": lambda: HistGradientBoostingClassifier(max_depth=3, learning_rate=0.05, max_iter=300,
                                                                    l2_regularization=1.0, random_state=0)}


def fit_antisymmetric(make, diff: np.ndarray):
    """A classifier fitted on each difference labelled perturbed and its negation labelled natural."""
    return make().fit(np.vstack([diff, -diff]), np.r_[np.ones(len(diff)), np.zeros(len(diff))])


def held_out_margin(make, diff: np.ndarray, train: np.ndarray, test: np.ndarray) -> np.ndarray:
    """P(perturbed | d) - 1/2, made antisymmetric: half of (p(d) - p(-d)); > 0 ranks the pair right."""
    model = fit_antisymmetric(make, diff[train])
    return 0.5 * (model.predict_proba(diff[test])[:, 1] - model.predict_proba(-diff[test])[:, 1])


def accuracy(margin: np.ndarray) -> tuple[float, int]:
    return float(np.mean((margin > 0) + 0.5 * (margin == 0))), len(margin)


def fmt(margin: np.ndarray) -> str:
    acc, n = accuracy(margin)
    lo, hi = wilson_interval(acc * n, n)
    return f"{100 * acc:.1f} [{100 * lo:.1f}-{100 * hi:.1f}]"


def parse_sets(specs: list[str]) -> list[tuple[str, Path]]:
    sets = []
    for spec in specs:
        name, sep, manifest = spec.partition("=")
        if not sep or not Path(manifest).is_file():
            raise ValueError(f"{spec!r} is not NAME=MANIFEST with an existing manifest")
        sets.append((name, Path(manifest)))
    return sets


def cross_validated(diff, types, generators, sources, joint: bool):
    """Held-out margins of each classifier: by source conversation (5 folds) and by generator."""
    by_conv = {name: np.zeros(len(diff)) for name in classifiers()}
    by_gen = {name: np.zeros(len(diff)) for name in classifiers()}
    groups = [np.ones(len(diff), bool)] if joint else [types == t for t in sorted(set(types))]
    for name, make in classifiers().items():
        for rows in groups:
            idx = np.flatnonzero(rows)
            if len(set(sources[idx])) < 5:
                continue
            for tr, te in GroupKFold(n_splits=5).split(idx, groups=sources[idx]):
                train = np.zeros(len(diff), bool)
                train[idx[tr]] = True
                test = np.zeros(len(diff), bool)
                test[idx[te]] = True
                by_conv[name][test] = held_out_margin(make, diff, train, test)
            for g in sorted(set(generators)):
                test = rows & (generators == g)
                # held out by generator and by conversation: no source of the test pairs in training
                train = rows & (generators != g) & ~np.isin(sources, sources[test])
                if train.sum() >= 20 and test.any():
                    by_gen[name][test] = held_out_margin(make, diff, train, test)
    return by_conv, by_gen


def default_name(names: list[str]) -> str:
    """The default scorer's column: timing-hazard-words, or timing-hazard where words are left out."""
    return "timing_hazard_words" if "timing_hazard_words" in names else "timing_hazard"


def table(title: str, default: np.ndarray, margins: dict, types, sets, default_label: str) -> list[str]:
    lines = [f"\n{title}\n", f"| type | set | pairs | default ({default_label}) | " + " | ".join(margins) + " |",
             "|---|---|---|---|" + "---|" * len(margins)]
    for t in [t for t in (*TYPES, SILENCED) if t in set(types)]:
        for g in sorted(set(sets)):
            rows = (types == t) & (sets == g)
            if rows.any():
                lines.append(f"| {t} | {g} | {rows.sum()} | {fmt(default[rows])} | "
                             + " | ".join(fmt(m[rows]) for m in margins.values()) + " |")
    for g in sorted(set(sets)):
        rows = sets == g
        lines.append(f"| all | {g} | {rows.sum()} | {fmt(default[rows])} | "
                     + " | ".join(fmt(m[rows]) for m in margins.values()) + " |")
    return lines


def tested(test_features, names, diff, generators, held_out_generator: bool) -> list[str]:
    """Both classifiers fitted on the training pairs of all five types (without the test set's own
    generator, `held_out_generator`: a test set named GENERATOR-FORM), then the test sets' pairs.
    `test_features`: (name, natural rows, perturbed rows, meta) of each test set."""
    default_label = default_name(names).replace("_", "-")
    default_col = names.index(default_name(names))
    margins = {name: [] for name in classifiers()}
    c_rows, diffs, set_col, type_col = [], [], [], []
    for name, nat_t, per_t, meta_t in test_features:
        d = per_t - nat_t
        train = generators != name.split("-")[0] if held_out_generator else np.ones(len(diff), bool)
        if not train.any():
            raise ValueError(f"no training pairs left without {name.split('-')[0]!r}")
        stacked = np.vstack([diff[train], d])
        on = np.r_[np.ones(train.sum(), bool), np.zeros(len(d), bool)]
        for cname, make in classifiers().items():
            margins[cname].append(held_out_margin(make, stacked, on, ~on))
        # The logistic classifier is linear in the difference, so it is a score of each clip too
        # (its decision function): its C-index can be set beside the default's.
        linear = fit_antisymmetric(classifiers()["logistic"], diff[train])
        first = {m[3]: i for i, m in reversed(list(enumerate(meta_t)))}  # each natural clip once
        nat_u = nat_t[sorted(first.values())]
        c_rows.append(f"| {name} | {c_index(per_t[:, default_col], nat_u[:, default_col]):.3f} | "
                      f"{c_index(linear.decision_function(per_t), linear.decision_function(nat_u)):.3f} |")
        diffs.append(d)
        set_col += [name] * len(d)
        type_col += [m[1] for m in meta_t]
    test_diff = np.vstack(diffs)
    scope = "the other generators' training pairs" if held_out_generator else "every training pair"
    lines = table(f"### Trained on {scope}, all five types together, tested on these sets",
                  test_diff[:, default_col], {k: np.concatenate(v) for k, v in margins.items()},
                  np.array(type_col), np.array(set_col), default_label)
    return lines + ["", f"| set | C-index, default ({default_label}) | C-index, logistic as a clip score |",
                    "|---|---|---|", *c_rows]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sets", nargs="+", help="GENERATOR=MANIFEST: training pairs (excise form, every type)")
    parser.add_argument("--silenced", nargs="*", default=[], metavar="GENERATOR=MANIFEST",
                        help="mute-form training pairs: only their silenced answers are added (as answer_silenced)")
    parser.add_argument("--test", nargs="*", default=[], metavar="NAME=MANIFEST",
                        help="score these pairs (every type; NAME is GENERATOR-FORM) with the classifiers fitted on "
                             "the training pairs of all five types, of every generator and of the others only, "
                             "instead of cross-validating")
    parser.add_argument("--voice-activity-only", action="store_true",
                        help="leave out the features that read words (the default is then timing-hazard)")
    parser.add_argument("--out", type=Path, help="write the tables here too (Markdown)")
    args = parser.parse_args(argv)
    try:
        text = tables(parse_sets(args.sets), parse_sets(args.silenced), parse_sets(args.test),
                      args.voice_activity_only)
    except (OSError, ValueError, JsonFileError) as exc:
        parser.error(str(exc).splitlines()[0])
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0


def tables(train_sets, silenced_sets, test_sets, voice_activity_only: bool = False) -> str:
    scorers = (TimingHazardWordsScorer.load(), TimingHazardScorer.load())
    names, nat, per, meta = pair_features(train_sets, scorers, voice_activity_only=voice_activity_only)
    if silenced_sets:
        _, nat_s, per_s, meta_s = pair_features(silenced_sets, scorers, only_type="hold_instead_of_shift",
                                                voice_activity_only=voice_activity_only)
        nat, per = np.vstack([nat, nat_s]), np.vstack([per, per_s])
        meta += [(g, SILENCED, s, p) for g, _, s, p in meta_s]
    diff = per - nat
    generators = np.array([m[0] for m in meta])
    types = np.array([m[1] for m in meta])
    sources = np.array([m[2] for m in meta])
    default = diff[:, names.index(default_name(names))]
    label = default_name(names).replace("_", "-")  # as the scorer is named
    lines = []
    if not test_sets:
        for joint in (False, True):
            scope = "all five types together" if joint else "each type alone"
            by_conv, by_gen = cross_validated(diff, types, generators, sources, joint)
            lines += table(f"### Trained on {scope}, held out by source conversation (5 folds)", default, by_conv,
                           types, generators, label)
            if len(set(generators)) > 1:
                lines += table(f"### Trained on {scope}, held out by generator (and by conversation)", default, by_gen,
                               types, generators, label)
    else:
        test_features = [(name, *pair_features([(name, manifest)], scorers,
                                               voice_activity_only=voice_activity_only)[1:])
                         for name, manifest in test_sets]
        lines += tested(test_features, names, diff, generators, held_out_generator=False)
        lines += tested(test_features, names, diff, generators, held_out_generator=True)
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())

"""Do the speaker's own words on *both* sides of a pause tell a real pause
from one whose answer was cut out? Measured on *training* pairs only; nothing here reads the
validation split.

    PYTHONPATH=.:benchmarks .venv/bin/python benchmarks/continuation_selection.py [--swb /tmp/swb]
        [--builder /tmp/cutout_train] [--crosscheck /tmp/cutout_train] [--out /tmp/continuation.md]

Where an answer is cut out, the speaker's words before the removed answer and their words after it
(their reply to it) end up on the two sides of one pause. The default's first-words term reads the
second side only (naturalness/first_words.py, held-out ROC-AUC 0.83 for "answers or goes on"). This
fits a logistic regression on both: at every IPU start after a mutual silence that is not a
backchannel and whose speaker has spoken before, the speaker's own last words (of their last IPU that
was not a backchannel) and their first words, as words, word pairs and their crossings; label: the
other spoke in between (what a cut leaves: the reply after the speaker's own words) or not (a real
pause). Fitted on 80 % of the training conversations no pair set draws from, its held-out ROC-AUC
measured on the other 20 %, beside the first-words table counted on the same conversations.

Versions on the ten training pair sets of benchmarks/word_cue_selection.py (made when missing):
- the default, timing-hazard-words (who-next cue, 1.5 x the first-words table, refitted as above);
- the table's term replaced, at the starts where the speaker goes on after their own pause, by the
  continuation model's log P(no turn between | both sides) - log P(no turn between), weight 1-3;
- that term or the table's added outside the rate, as a sum over the clip (a pair's shared starts
  then cancel exactly), weight 0.05-0.2;
- the default with a higher flip charge (3.75, 4: starts and stops cheaper, an exchange with them);
- for the C-index floor, the default's peak read against the clip's own mean rate (conversations
  differ in level more than one failure moves it): 0 x mean + 1 x peak, -1 x mean + 2 x peak.
Criterion as in benchmarks/first_words_selection.py: the mean over the ten sets of the worst type plus the mean
overall accuracy. And the default's cut-out pairs by the pause they leave.
"""

from __future__ import annotations

import bisect
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np
from sklearn.feature_extraction import DictVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from tqdm import tqdm

from first_words_selection import Form, fit_table, start_transition, term_by_frame
from judge.turn_end import utterance_tokens
from naturalness.first_words import FILLERS, IpuStart, ipu_starts, scored_starts
from naturalness.timing_hazard.model_file import load_timing_model
from naturalness.timing_hazard.scorer import TimingParams, score_log_likelihoods
from turnnat_validation import TYPES
from turntaking.activity import Conversation
from turntaking.events import detect_events
from turntaking.switchboard import conversation_ids, load_conversation
from word_cue_selection import (
    build_missing,
    clip_likelihoods,
    distinct_clips,
    held_out_turn_end_model,
    pair_set_arguments,
    set_accuracy,
    sets,
    training_pairs,
)

PACKAGED_FORM = Form(overlap=False, backchannels=False, by_turn=True, nofill=True)  # the default's table
WORDS_PER_SIDE = 4  # the bag of words on each side (4 did better on held-out starts than 8 or 15)


@dataclass(frozen=True)
class Resumption:
    """A scored start (naturalness.first_words) with its speaker's own last words before it."""

    start: IpuStart
    own_last: tuple[str, ...]  # the words of the speaker's last IPU before it that was not a backchannel

    @property
    def goes_on(self) -> bool:
        return not self.start.answers


def resumptions(conv: Conversation) -> list[Resumption]:
    """Every start the first-words term scores whose speaker has spoken before in the dialogue."""
    detected = detect_events(conv)
    words = [sorted(conv.words[k], key=lambda w: w.start) for k in (0, 1)]
    starts_of = [[w.start for w in side] for side in words]
    backchannels = [set(detected.backchannels[k]) for k in (0, 1)]
    own = [[span for span in detected.ipus[k] if span not in backchannels[k]] for k in (0, 1)]
    ends = [[e for _, e in side] for side in own]
    out = []
    for st in scored_starts(ipu_starts(conv, detected=detected)):
        k = st.speaker
        i = bisect.bisect_left(ends[k], st.time_s) - 1
        if i < 0:
            continue
        s, e = own[k][i]
        tokens = utterance_tokens(w.text for w in words[k][bisect.bisect_left(starts_of[k], s - 0.02):
                                                              bisect.bisect_left(starts_of[k], e)])
        tokens = tuple(t for t in tokens if t not in FILLERS) or tokens[-1:]
        if tokens:
            out.append(Resumption(st, tokens))
    return out


def features(r: Resumption, n: int = WORDS_PER_SIDE) -> dict[str, int]:
    last, first = r.own_last, r.start.content_tokens
    names = [f"l1={last[-1]}", f"l2={' '.join(last[-2:])}", f"f1={first[0]}", f"f2={' '.join(first[:2])}",
             f"f3={' '.join(first[:3])}", f"x={last[-1]}|{first[0]}", f"x2={' '.join(last[-2:])}|{first[0]}",
             f"x3={last[-1]}|{' '.join(first[:2])}", f"ln={min(len(last), 8)}"]
    names += [f"fb={w}" for w in first[:n]] + [f"lb={w}" for w in last[-n:]]
    names += [f"fbb={a}_{b}" for a, b in zip(first[:n], first[1:n])]
    names += [f"lbb={a}_{b}" for a, b in zip(last[-n:], last[-n + 1:])]
    return dict.fromkeys(names, 1)


def first_only(r: Resumption) -> dict[str, int]:
    return {k: v for k, v in features(r).items() if k.startswith(("f1=", "f2=", "f3=", "fb=", "fbb="))}


@dataclass
class Continuation:
    vectorizer: DictVectorizer
    model: LogisticRegression
    base_rate: float  # share of starts after the other's speech among the fitted ones
    featurize: Callable[[Resumption], dict[str, int]] = features

    @classmethod
    def fit(cls, rs: list[Resumption], featurize=features) -> Continuation:
        vec = DictVectorizer()
        x = vec.fit_transform([featurize(r) for r in rs])
        y = np.array([r.start.answers for r in rs])
        return cls(vec, LogisticRegression(C=0.3, max_iter=3000).fit(x, y), float(y.mean()), featurize)

    def p_between(self, rs: list[Resumption]) -> np.ndarray:
        """P(the other spoke between the two sides) of each resumption."""
        return self.model.predict_proba(self.vectorizer.transform([self.featurize(r) for r in rs]))[:, 1]


def continuation_change(rs: list[Resumption], cont: Continuation, table, n: int) -> np.ndarray:
    """What replacing the table's ratio by the continuation model's log P(no turn between) - its
    base, at each start where the speaker goes on after their own pause, adds to the first-words term."""
    change = np.zeros(max(n - 1, 0))
    goes_on = [r for r in rs if r.goes_on]
    for r, q in zip(goes_on, cont.p_between(goes_on) if goes_on else []):
        ratio = np.log1p(-q) - np.log1p(-cont.base_rate)
        change[start_transition(r.start.time_s, n)] += ratio - table.log_ratio(r.start)
    return change


class ClipTerms(NamedTuple):
    ll: np.ndarray  # per-transition log-likelihoods with the who-next word cue
    flips: np.ndarray  # starts and stops per transition
    table: np.ndarray  # the first-words table's term
    continuation: np.ndarray  # the same with the continuation model where the speaker goes on


def accuracy_row(name: str, score, manifests: dict) -> tuple[float, str]:
    worsts, overalls, c_indices, per_type = [], [], [], {t: [] for t in TYPES}
    scores = {p: score(p) for entries in manifests.values() for e in entries for p in (e.natural, e.perturbed)}
    score = scores.__getitem__  # each clip scored once, for the accuracies and the C-index
    for set_name, entries in manifests.items():
        acc, overall = set_accuracy(score, entries)
        for t in TYPES:
            per_type[t].append((set_name, acc[t]))
        worsts.append(min(acc.values()))
        overalls.append(overall)
        perturbed, natural = (np.array([score(getattr(e, side)) for e in entries]) for side in ("perturbed", "natural"))
        # the C-index: every perturbed clip of the set against every natural one
        c_indices.append(float(np.mean(perturbed[:, None] > natural[None, :])))
    cut = [a for n, a in per_type["hold_instead_of_shift"] if "excise" in n]
    missing = [a for n, a in per_type["hold_instead_of_shift"] if "mute" in n]
    rng = {t: f"{min(a for _, a in v):.0f}-{max(a for _, a in v):.0f}" for t, v in per_type.items()}
    crit = float(np.mean(worsts)) + float(np.mean(overalls))
    return crit, (f"| {name} | {min(worsts):.0f} | {np.mean(worsts):.1f} | {np.mean(overalls):.1f} | "
                  f"{min(cut):.0f}-{max(cut):.0f} | {min(missing):.0f}-{max(missing):.0f} | {rng['late_response']} | "
                  f"{rng['early_entry']} | {rng['shift_instead_of_hold']} | {rng['excessive_backchannel']} | "
                  f"{np.mean(c_indices):.3f} |")


def pause_left(entry_json: dict) -> float:
    details = entry_json.get("details", {})
    return float(details.get("compacted_gap_s", details.get("pause_s", np.nan)))


def main(argv=None) -> int:
    args = pair_set_arguments("/tmp/continuation.md", argv)
    folders = sets(Path(args.builder), Path(args.crosscheck))
    build_missing(args.swb, folders)
    manifests, sources = training_pairs(folders)
    free = [i for i in conversation_ids(args.swb, split="train") if f"sw{i}" not in sources]
    fit_ids, test_ids = free[: int(0.8 * len(free))], free[int(0.8 * len(free)):]
    fit_convs = [load_conversation(args.swb, i) for i in tqdm(fit_ids, desc="fitted conversations")]
    test_convs = [load_conversation(args.swb, i) for i in tqdm(test_ids, desc="held-out conversations")]
    table = fit_table([st for c in fit_convs for st in ipu_starts(c)], PACKAGED_FORM)
    fit_rs = [r for c in fit_convs for r in resumptions(c)]
    test_rs = [r for c in test_convs for r in resumptions(c)]
    cont = Continuation.fit(fit_rs)
    firsts = Continuation.fit(fit_rs, first_only)
    y = [r.start.answers for r in test_rs]
    lines = [f"Resumptions (starts after a silence, not backchannels, the speaker having spoken before): {len(fit_rs)} "
             f"of {len(fit_ids)} training conversations no pair set draws from fitted ({100 * cont.base_rate:.1f} % "
             f"after the other's speech), {len(test_rs)} of {len(test_ids)} others held out.", "",
             "| model of P(the other spoke between) | held-out ROC-AUC |", "|---|---|",
             f"| first-words table (the default's, counted on the same conversations) | "
             f"{roc_auc_score(y, [table.p_answers(r.start.content_tokens) for r in test_rs]):.3f} |",
             f"| logistic, first words only | {roc_auc_score(y, firsts.p_between(test_rs)):.3f} |",
             f"| logistic, own last words and first words, crossed | {roc_auc_score(y, cont.p_between(test_rs)):.3f} |"]
    print("\n".join(lines), flush=True)

    turn_end, _, _ = held_out_turn_end_model(args.swb, sources)
    model = load_timing_model()
    clips = {}
    for p, conv in distinct_clips(manifests):
        _, ll_cue, flips = clip_likelihoods(conv, model, turn_end)
        table_term = term_by_frame(ipu_starts(conv), table, PACKAGED_FORM, len(flips) + 1)
        clips[p] = ClipTerms(ll_cue, flips, table_term,
                             table_term + continuation_change(resumptions(conv), cont, table, len(flips) + 1))

    def rate(table_w=1.5, cont_w=0.0, params=TimingParams(), mean_w=1.0):
        def f(p):
            c = clips[p]
            term = cont_w * c.continuation if cont_w else table_w * c.table
            s = score_log_likelihoods(c.ll + term, c.flips, params)
            return s.dialog_nll + (mean_w - 1.0) * s.mean_rate
        return f

    def summed(base, term, weight):  # the term's sum over the clip, outside the rate
        return lambda p: base(p) - weight * getattr(clips[p], term).sum()

    versions = {"timing-hazard-words (default: who next + 1.5 x table)": rate()}
    for w in (1.0, 1.5, 2.0, 3.0):
        versions[f"who next + {w:g} x continuation (table where the speaker answers)"] = rate(cont_w=w)
    for w in (0.05, 0.1, 0.2):
        versions[f"who next + {w:g} x table, summed outside the rate"] = summed(rate(table_w=0.0), "table", w)
        versions[f"who next + {w:g} x continuation, summed outside the rate"] = summed(rate(table_w=0.0), "continuation", w)
        versions[f"default + {w:g} x continuation, summed outside the rate"] = summed(rate(), "continuation", w)
    for c in (3.75, 4.0):
        versions[f"default, flip charge {c:g}"] = rate(params=TimingParams(flip_cost_nats=c))
    # for the C-index floor: the peak read against the clip's own level
    for mean_w, peak_w in ((0.0, 1.0), (-1.0, 2.0)):
        versions[f"default read as {mean_w:g} x mean rate + {peak_w:g} x peak rate"] = rate(
            params=TimingParams(peak_weight=peak_w), mean_w=mean_w)
    rows = sorted((accuracy_row(n, f, manifests) for n, f in tqdm(versions.items(), desc="versions")),
                  key=lambda r: -r[0])
    lines += ["", "Ten training sets, ranged (cut-out: the five excise sets; missing: the five mute sets), ranked by "
              "the criterion (mean worst type + mean overall):", "",
              "| version | worst type | mean worst | mean overall | cut-out | missing | late | early | shift | BC | "
              "mean C-index |", "|---|---|---|---|---|---|---|---|---|---|---|"] + [r for _, r in rows]

    default = versions["timing-hazard-words (default: who next + 1.5 x table)"]
    by_pause = []
    for name, folder in folders.items():
        if "excise" not in name:
            continue
        pauses = {raw["pair_id"]: pause_left(raw) for raw in map(json.loads, (folder / "manifest.jsonl").open())}
        by_pause += [(pauses[e.pair_id], default(e.perturbed) > default(e.natural))
                     for e in manifests[name] if e.type == "hold_instead_of_shift"]
    lines += ["", "The default's cut-out pairs (five excise sets) by the pause the cut leaves:", "",
              "| pause left | pairs | ranked right |", "|---|---|---|"]
    for lo, hi in ((0.0, 0.7), (0.7, 1.0), (1.0, 9.0)):
        sel = [r for s, r in by_pause if lo <= s < hi]
        lines.append(f"| {lo:g}-{hi:g} s | {len(sel)} | {100 * np.mean(sel):.1f} % |" if sel else
                     f"| {lo:g}-{hi:g} s | 0 | - |")
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"written {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

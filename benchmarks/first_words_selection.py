"""The first words after a silence as evidence of who spoke, chosen on
*training* pairs only (benchmarks/resumption_words_probe.py found the lead; this compares the forms
a scorer could take).

    PYTHONPATH=.:benchmarks .venv/bin/python benchmarks/first_words_selection.py [--swb /tmp/swb]
        [--builder /tmp/cutout_train] [--crosscheck /tmp/nat24w] [--out /tmp/nat24w/first_words.md]

The ten training pair sets of benchmarks/word_cue_selection.py (made there when missing). The
first-words tables are counted on the training conversations no pair set draws from, 80 % of them;
the other 20 % give the held-out ROC-AUC of each table.

At an IPU start the role is "answers" when the last speech before it (its last IPU, or its last
IPU that was not a backchannel) was the other speaker's, "goes on" otherwise; the term added to
that start's frame log-likelihood is w * [log P(role | first words) - log P(role)]. Forms compared:
- where: starts after a mutual silence only (the probe), or also starts in overlap (role
  "answers": an answer moved into overlap keeps the term its words have after a silence);
- backchannels: the listener's backchannels (turntaking.events) get a term, or none;
- the last speaker: by IPU, or by the last IPU that was not a backchannel;
- fillers: the first two tokens as they are, or after dropping "uh" / "um" (ASR mostly drops them);
- weight 1, 1.5, 2, 3; on timing-hazard or on timing-hazard-words (its who-next cue).
Criterion: the mean over the ten sets of the worst type plus the mean overall accuracy (as the
word-cue selection); every version on every set is written to --out.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from sklearn.metrics import roc_auc_score
from tqdm import tqdm

from naturalness.first_words import FirstWordsTable, IpuStart, ipu_starts
from naturalness.timing_hazard.context import FRAME_RATE
from naturalness.timing_hazard.model_file import load_timing_model
from naturalness.timing_hazard.scorer import score_log_likelihoods
from turnnat_validation import TYPES
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


@dataclass(frozen=True)
class Form:
    overlap: bool
    backchannels: bool
    by_turn: bool
    nofill: bool

    def label(self) -> str:
        return (("silence+overlap" if self.overlap else "silence") + (", BCs" if self.backchannels else ", no BCs")
                + (", last turn" if self.by_turn else ", last IPU") + (", no fillers" if self.nofill else ""))

    def as_packaged(self, st: IpuStart, scoring: bool = False) -> IpuStart | None:
        """The start as the packaged form (naturalness.first_words) would see this form's reading
        of it; None where this form neither counts nor scores it."""
        if st.backchannel and not self.backchannels:
            return None
        if not st.after_silence and not (scoring and self.overlap):
            return None
        answers = (st.answers if self.by_turn else st.answers_ipu) if st.after_silence else True
        return replace(st, after_silence=True, backchannel=False, answers=answers,
                       content_tokens=st.content_tokens if self.nofill else st.tokens)


def fit_table(starts: list[IpuStart], form: Form) -> FirstWordsTable:
    return FirstWordsTable.fit([x for x in (form.as_packaged(s) for s in starts) if x is not None])


def start_transition(time_s: float, n: int) -> int:
    """The frame transition (of a clip's n frames) on which a start at time_s is scored."""
    return min(max(int(round(time_s * FRAME_RATE)) - 1, 0), n - 2)


def term_by_frame(starts: list[IpuStart], table: FirstWordsTable, form: Form, n: int) -> np.ndarray:
    out = np.zeros(max(n - 1, 0))
    for st in (form.as_packaged(s, scoring=True) for s in starts):
        if st is not None:
            out[start_transition(st.time_s, n)] += table.log_ratio(st)
    return out


FORMS = [Form(o, b, t, f) for o in (False, True) for b in (True, False) for t in (False, True) for f in (False, True)]


def main(argv=None) -> int:
    args = pair_set_arguments("/tmp/nat24w/first_words.md", argv)
    folders = sets(Path(args.builder), Path(args.crosscheck))
    build_missing(args.swb, folders)
    manifests, sources = training_pairs(folders)
    free = [i for i in conversation_ids(args.swb, split="train") if f"sw{i}" not in sources]
    fit_ids, test_ids = free[: int(0.8 * len(free))], free[int(0.8 * len(free)):]
    fit_starts = [ipu_starts(load_conversation(args.swb, i)) for i in tqdm(fit_ids, desc="table conversations")]
    test_starts = [ipu_starts(load_conversation(args.swb, i)) for i in tqdm(test_ids, desc="held-out conversations")]
    tables, lines = {}, [f"Tables: {len(fit_ids)} training conversations no pair set draws from; ROC-AUC on the "
                         f"starts after a silence of {len(test_ids)} others.", "",
                         "| table (counted on starts after a silence) | starts | answers % (counted) | held-out ROC-AUC |",
                         "|---|---|---|---|"]
    for form in FORMS:
        key = (form.backchannels, form.by_turn, form.nofill)
        if key in tables:
            continue
        tables[key] = fit_table([x for s in fit_starts for x in s], form)
        held = [x for x in (form.as_packaged(st) for s in test_starts for st in s) if x is not None]
        auc = roc_auc_score([x.answers for x in held], [tables[key].p_answers(x.content_tokens) for x in held])
        lines.append(f"| {Form(False, *key).label()[9:]} | {len(held)} held out | {100 * tables[key].base_rate:.1f} | "
                     f"{auc:.3f} |")
        print(lines[-1], flush=True)

    turn_end, _, _ = held_out_turn_end_model(args.swb, sources)
    model = load_timing_model()
    cache = {}
    for p, conv in distinct_clips(manifests):
        ll, ll_cue, flips = clip_likelihoods(conv, model, turn_end)
        starts = ipu_starts(conv)
        cache[p] = (ll, ll_cue, flips, {f: term_by_frame(starts, tables[(f.backchannels, f.by_turn, f.nofill)],
                                                         f, len(flips) + 1) for f in FORMS})

    def version(weight, cue, form):
        def f(p):
            ll, ll_cue, flips, terms = cache[p]
            term = terms[form] if form is not None else 0.0
            return score_log_likelihoods((ll_cue if cue else ll) + weight * term, flips).dialog_nll
        return f

    versions = {"timing-hazard (default)": version(0.0, False, None),
                "timing-hazard-words": version(0.0, True, None)}
    for form in FORMS:
        for w in (1.0, 1.5, 2.0, 3.0):
            for cue in (False, True):
                versions[f"{'timing-hazard-words' if cue else 'timing-hazard'} + {w:g} x first words "
                         f"({form.label()})"] = version(w, cue, form)
    rows = []
    detail = ["Per set: overall / late / early / hold (that set's form) / shift / BC.", "",
              "| version | " + " | ".join(manifests) + " |", "|---|" + "---|" * len(manifests)]
    for vname, f in tqdm(versions.items(), desc="versions"):
        cells, worsts, overalls, per_type = [], [], [], {t: [] for t in TYPES}
        for name, entries in manifests.items():
            acc, overall = set_accuracy(f, entries)
            for t in TYPES:
                per_type[t].append((name, acc[t]))
            worsts.append(min(acc.values()))
            overalls.append(overall)
            cells.append(f"{overalls[-1]:.1f} / " + " / ".join(f"{acc[t]:.0f}" for t in TYPES))
        detail.append(f"| {vname} | " + " | ".join(cells) + " |")
        cut = [a for n, a in per_type["hold_instead_of_shift"] if "excise" in n]
        missing = [a for n, a in per_type["hold_instead_of_shift"] if "mute" in n]
        rng = {t: (min(a for _, a in v), max(a for _, a in v)) for t, v in per_type.items()}
        rows.append((float(np.mean(worsts)) + float(np.mean(overalls)), vname, min(worsts), float(np.mean(worsts)),
                     float(np.mean(overalls)), (min(cut), max(cut)), (min(missing), max(missing)), rng))
    rows.sort(key=lambda r: -r[0])
    lines += ["", "Ranked by the criterion (mean worst type + mean overall over the ten sets):", "",
              "| version | worst type | mean worst | mean overall | cut-out | missing | late | early | shift | BC |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for crit, vname, worst, mworst, mover, cut, missing, rng in rows:
        r = {t: f"{a:.0f}-{b:.0f}" for t, (a, b) in rng.items()}
        lines.append(f"| {vname} | {worst:.0f} | {mworst:.1f} | {mover:.1f} | {cut[0]:.0f}-{cut[1]:.0f} | "
                     f"{missing[0]:.0f}-{missing[1]:.0f} | {r['late_response']} | {r['early_entry']} | "
                     f"{r['shift_instead_of_hold']} | {r['excessive_backchannel']} |")
    Path(args.out).write_text("\n".join(lines + ["", ""] + detail) + "\n")
    print("\n".join(lines[:40]))
    print(f"written {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

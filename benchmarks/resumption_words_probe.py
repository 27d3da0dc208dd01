"""A probe (training pairs only; no scorer is registered from it, benchmarks/
first_words_selection.py chooses the scorer's form): do the *first* words after a silence tell
whether the speaker answers the other or goes on?

    PYTHONPATH=.:benchmarks .venv/bin/python benchmarks/resumption_words_probe.py [--swb /tmp/swb]
        [--builder /tmp/cutout_train] [--crosscheck /tmp/nat24w] [--out /tmp/nat24w/resumption.md]

A cut-out answer leaves the first speaker going on with what was their reply to the removed
answer ("oh really", "yeah that's ..."), after their own pause; an inserted turn puts a turn before
the first speaker's own continuation ("and then we ..."). So at every start of speech after a
mutual silence the probe asks P(the starter answers the other | the first two words of the new
IPU), counted on the training conversations no pair set draws from (as benchmarks/
word_cue_selection.py counts its word tables; one-word and two-word tables shrunk toward the
coarser level with pseudo-count 10), and charges the start frame w * -[log P(role | words) -
log P(role)], the role (answer or resume) being what the voice activity shows: who spoke last.
Reported: the separation of the roles on held-out training silences (ROC-AUC), and timing-hazard
plus the term, alone and with timing-hazard-words' cue, and plus its negative part only (a start
whose words do not fit the role costs, none gains), on the ten training pair sets.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import numpy as np
from sklearn.metrics import roc_auc_score

from judge.turn_end import utterance_tokens
from naturalness.timing_hazard.context import FRAME_RATE
from naturalness.timing_hazard.model_file import load_timing_model
from naturalness.timing_hazard.scorer import score_log_likelihoods
from turnnat_validation import TYPES
from turntaking.activity import Conversation, load_conversation_json
from turntaking.events import EventParams, inter_pausal_units
from turntaking.switchboard import conversation_ids, load_conversation
from word_cue_selection import clip_likelihoods, held_out_turn_end_model, pair_set_arguments, sets, training_pairs

SHRINK = 10.0


def starts_after_silence(conv: Conversation, events: EventParams = EventParams()):
    """(speaker, start s, answers: the other spoke last, first two tokens) of every IPU start after a
    mutual silence, where the IPU has words."""
    ipus = [inter_pausal_units(conv.activity[k], events.ipu_silence_s) for k in (0, 1)]
    spans = sorted((s, e, k) for k in (0, 1) for s, e in ipus[k])
    out = []
    latest_end, last_speaker = None, None
    for s, e, k in spans:
        if latest_end is not None and s > latest_end:  # a mutual silence before this start
            words = [w.text for w in conv.words[k] if s - 0.02 <= w.start < e][:4]
            tokens = utterance_tokens(words)[:2]
            if tokens:
                out.append((k, s, last_speaker != k, tokens))
        if latest_end is None or e >= latest_end:
            latest_end, last_speaker = e, k
    return out


class FirstWords:
    """P(answer | first one or two words), shrunk toward the coarser level."""

    def __init__(self, samples):
        self.base = float(np.mean([a for a, _ in samples]))
        self.one, self.two = Counter(), Counter()
        for answers, tokens in samples:
            self.one[tokens[0], "n"] += 1
            self.one[tokens[0], "a"] += answers
            if len(tokens) == 2:
                self.two[tokens, "n"] += 1
                self.two[tokens, "a"] += answers

    def p_answer(self, tokens) -> float:
        p = (self.one[tokens[0], "a"] + SHRINK * self.base) / (self.one[tokens[0], "n"] + SHRINK)
        if len(tokens) == 2:
            p = (self.two[tuple(tokens), "a"] + SHRINK * p) / (self.two[tuple(tokens), "n"] + SHRINK)
        return min(max(p, 1e-3), 1 - 1e-3)


def term_by_frame(conv: Conversation, table: FirstWords, n: int) -> np.ndarray:
    """(n - 1,) the log-likelihood ratio log P(role | first words) - log P(role) at each start."""
    out = np.zeros(max(n - 1, 0))
    for k, s, answers, tokens in starts_after_silence(conv):
        p = table.p_answer(tokens)
        r = (np.log(p) - np.log(table.base)) if answers else (np.log(1 - p) - np.log(1 - table.base))
        t = min(max(int(round(s * FRAME_RATE)) - 1, 0), n - 2)
        out[t] += r
    return out


def main(argv=None) -> int:
    args = pair_set_arguments("/tmp/nat24w/resumption.md", argv)

    folders = sets(Path(args.builder), Path(args.crosscheck))
    manifests, sources = training_pairs(folders)
    free = [i for i in conversation_ids(args.swb, split="train") if f"sw{i}" not in sources]
    fit_ids, test_ids = free[: int(0.8 * len(free))], free[int(0.8 * len(free)):]
    samples = [(a, t) for i in fit_ids for _, _, a, t in starts_after_silence(load_conversation(args.swb, i))]
    table = FirstWords(samples)
    held = [(a, t) for i in test_ids for _, _, a, t in starts_after_silence(load_conversation(args.swb, i))]
    auc = roc_auc_score([a for a, _ in held], [table.p_answer(t) for _, t in held])
    lines = [f"First-words table: {len(fit_ids)} training conversations no pair set draws from ({len(samples)} starts "
             f"after a silence, {100 * table.base:.1f} % answers); ROC-AUC of P(answer | first words) on the "
             f"starts of {len(test_ids)} other such conversations: {auc:.3f} ({len(held)} starts).", ""]
    print(lines[0], flush=True)
    turn_end, _, _ = held_out_turn_end_model(args.swb, sources)
    model = load_timing_model()

    cache = {}
    for name, entries in manifests.items():
        for e in entries:
            for p in (e.natural, e.perturbed):
                if p not in cache:
                    conv = load_conversation_json(p)
                    ll, ll_cue, flips = clip_likelihoods(conv, model, turn_end)
                    cache[p] = (ll, ll_cue, flips, term_by_frame(conv, table, len(flips) + 1))
        print(name, flush=True)

    def version(weight, cue, mismatch_only=False):
        def f(p):
            ll, ll_cue, flips, term = cache[p]
            if mismatch_only:  # only starts whose words do not fit the role cost; none gains
                term = np.minimum(term, 0.0)
            return score_log_likelihoods((ll_cue if cue else ll) + weight * term, flips).dialog_nll
        return f

    versions = {"timing-hazard (default)": version(0.0, False)}
    for w in (0.5, 1.0, 2.0, 3.0, 4.0):
        versions[f"timing-hazard + {w:g} x first-words term"] = version(w, False)
        versions[f"timing-hazard-words + {w:g} x first-words term"] = version(w, True)
    for w in (1.0, 2.0, 3.0, 4.0):
        versions[f"timing-hazard + {w:g} x first-words mismatch only"] = version(w, False, True)
    lines += ["Per set: overall / late / early / hold (that set's form) / shift / BC.", "",
              "| version | " + " | ".join(manifests) + " | worst type |", "|---|" + "---|" * (len(manifests) + 1)]
    for vname, f in versions.items():
        cells, worst = [], 100.0
        for name, entries in manifests.items():
            right = {t: [f(e.perturbed) > f(e.natural) for e in entries if e.type == t] for t in TYPES}
            acc = {t: 100 * float(np.mean(v)) for t, v in right.items()}
            worst = min(worst, min(acc.values()))
            overall = 100 * float(np.mean([x for v in right.values() for x in v]))
            cells.append(f"{overall:.1f} / " + " / ".join(f"{acc[t]:.0f}" for t in TYPES))
        lines.append(f"| {vname} | " + " | ".join(cells) + f" | {worst:.0f} |")
        print(lines[-1], flush=True)
    Path(args.out).write_text("\n".join(lines) + "\n")
    print(f"written {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Does a lexical turn-completion cue lift the cut-out answer? Chosen on
*training* pairs only.

    PYTHONPATH=.:benchmarks .venv/bin/python benchmarks/word_cue_selection.py [--swb /tmp/swb]
        [--builder /tmp/cutout_train] [--crosscheck /tmp/nat24w] [--out /tmp/nat24w/selection.md]

Pair sets (training conversations, 60 pairs per type, both forms each; nothing here reads the
validation split): builder seed 1 (benchmarks/cut_out_answer_probe.py's sets, which keep words),
crosscheck seeds 1 and 2 and crosscheck --equal-length seeds 1 and 2, built with words by
`annotation build-crosscheck-pairs SWB --split train --per-type 60 --seed S --hold-removal FORM
[--equal-length] --out CROSSCHECK/crosscheck[-eq]-FORM-sS` (made here when missing).

The word cue (naturalness/word_cue.py) needs P(shift | last words); the packaged turn-end model
counted its word tables on all training conversations, the pairs' sources among them. So the
tables used here are counted again on the training conversations that no pair set draws from
(the packaged model's shrinkage, regression weights and question model kept; the question model
was fitted on dialog acts of validation conversations, so it is out of sample here): what a pair
sees is then what a validation pair sees from the packaged model.

Versions: timing-hazard as it is; plus the word cue (words alone, or words and P(question)) at
several weights, as evidence of who speaks next (`who_next_hazards`: the hazard that anyone
starts kept, the other's share moved) or as a shift of both hazards' log-odds (the audio cue's
form) with two centres (the logit of the training share of shifts, or the median of that
speaker's cues in the clip); plus score forms (for "a removed turn also removes the
costly events around it, and a rate then falls"): the mean cost per event and a sum of the
context-free duration likelihood. Every version is scored on every set: overall / per type /
C-index, the range over sets, the ranking by the choice's criterion (the mean of the worst type
over all ten sets and the mean overall accuracy), and the cut-out answers by how much their words
say a turn ended before the removed answer.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from tqdm import tqdm

from judge.turn_end import conversation_silences, count_words, load_turn_end_model, logit
from naturalness.pairs import read_pairs_manifest
from naturalness.timing_hazard.context import FRAME_RATE, frame_context, ipu_frames
from naturalness.timing_hazard.hazards import context_cells, transition_log_likelihood
from naturalness.timing_hazard.model_file import load_timing_model
from naturalness.timing_hazard.scorer import TimingParams, score_log_likelihoods
from naturalness.turn_cue import cue_logit_shift
from naturalness.word_cue import who_next_hazards, word_cues
from turnnat_validation import EDGES_S, KINDS, TYPES, clip_events, fit_duration_likelihood
from turntaking.activity import load_conversation_json
from turntaking.switchboard import conversation_ids, load_conversation

ROOT = Path(__file__).resolve().parent.parent
SHORT = {"late_response": "late", "early_entry": "early", "hold_instead_of_shift": "hold",
         "shift_instead_of_hold": "shift", "excessive_backchannel": "BC"}


def sets(builder: Path, crosscheck: Path) -> dict[str, Path]:
    out = {f"builder-{f}-s1": builder / f"builder-{f}-s1" for f in ("excise", "mute")}
    for eq in ("", "-eq"):
        for s in (1, 2):
            for f in ("excise", "mute"):
                out[f"crosscheck{eq}-{f}-s{s}"] = crosscheck / f"crosscheck{eq}-{f}-s{s}"
    return out


def pair_set_arguments(out: str, argv=None) -> argparse.Namespace:
    """The Switchboard folder, the training pair sets' folders (`sets`) and the report's path."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--swb", default="/tmp/swb")
    ap.add_argument("--builder", default="/tmp/cutout_train")
    ap.add_argument("--crosscheck", default="/tmp/nat24w")
    ap.add_argument("--out", default=out)
    return ap.parse_args(argv)


def training_pairs(folders: dict[str, Path]) -> tuple[dict[str, list], set[str]]:
    """Each training set's pairs, and the conversations they were cut from (the word tables leave
    these out)."""
    manifests = {name: read_pairs_manifest(folder / "manifest.jsonl") for name, folder in folders.items()}
    return manifests, {e.source for entries in manifests.values() for e in entries}


def distinct_clips(manifests: dict[str, list]) -> Iterator[tuple[Path, object]]:
    """(path, conversation) of every clip of the pair sets, each once, with a progress bar per set."""
    seen = set()
    for name, entries in manifests.items():
        for e in tqdm(entries, desc=name):
            for p in (e.natural, e.perturbed):
                if p not in seen:
                    seen.add(p)
                    yield p, load_conversation_json(p)


def set_accuracy(score, entries) -> tuple[dict[str, float], float]:
    """Pair accuracy (%) of a score (higher = less natural) on one pair set: by type, and overall."""
    right = {t: [score(e.perturbed) > score(e.natural) for e in entries if e.type == t] for t in TYPES}
    return ({t: 100 * float(np.mean(v)) for t, v in right.items()},
            100 * float(np.mean([x for v in right.values() for x in v])))


def build_missing(swb: str, folders: dict[str, Path]) -> None:
    for name, folder in folders.items():
        if (folder / "manifest.jsonl").is_file() or not name.startswith("crosscheck"):
            continue
        form, seed = name.split("-")[-2], name.split("-")[-1][1:]
        subprocess.run([sys.executable, "-m", "annotation", "build-crosscheck-pairs", swb, "--split", "train",
                        "--per-type", "60", "--seed", seed, "--hold-removal", form, "--out", str(folder)]
                       + (["--equal-length"] if "-eq-" in name else []), cwd=ROOT, check=True)


def held_out_turn_end_model(swb: str, exclude: set[str]):
    """The packaged turn-end model with its word tables counted on training conversations not in `exclude`."""
    packaged = load_turn_end_model()
    silences = []
    ids = [i for i in conversation_ids(swb, split="train") if f"sw{i}" not in exclude and i not in exclude]
    for i in ids:
        silences += conversation_silences(load_conversation(swb, i), None)
    one, two = count_words(silences)
    base = float(np.mean([s.shift for s in silences]))
    return replace(packaged, base_rate=base, last_word=one, last_two_words=two), len(ids), len(silences)


def clip_likelihoods(conv, model, turn_end) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(timing-hazard's per-transition log-likelihoods, the same with the word cue as timing-hazard-words
    uses it (who next, weight 1, with P(question)), starts and stops per transition) of a clip."""
    va = ipu_frames(conv)
    flips, h = model.frame_hazards(va)
    cued = who_next_hazards(h, word_cues(conv, turn_end, True), va, FRAME_RATE, 1.0, logit(turn_end.base_rate))
    return transition_log_likelihood(flips, h)[0], transition_log_likelihood(flips, cued)[0], flips.sum(axis=0)


@dataclass
class Clip:
    va: np.ndarray
    h: np.ndarray  # (2, n - 1) hazards without a cue
    flip: np.ndarray  # (2, n - 1) flips
    flips: np.ndarray  # (n - 1,) starts and stops per frame transition
    cues: dict  # with_question -> cues
    events: list
    duration: float


def clip_of(path: Path, model, turn_end) -> Clip:
    conv = load_conversation_json(path)
    if conv.words is None:
        raise SystemExit(f"{path}: no words (rebuild the pairs with this code)")
    va = ipu_frames(conv)
    ctx = frame_context(va)
    h = model.hazard[context_cells(ctx)[2]]
    cues = {q: word_cues(conv, turn_end, with_question=q) for q in (False, True)}
    return Clip(va, h, ctx.flips, (np.diff(va, axis=1) != 0).sum(axis=0), cues, clip_events(conv), conv.duration)


def hazard_ll(c: Clip, shift=None) -> np.ndarray:
    h = c.h
    if shift is not None:
        h = np.clip(1.0 / (1.0 + np.exp(-(np.log(h / (1 - h)) + shift))), 1e-6, 1 - 1e-6)
    return np.where(c.flip == 1, np.log(h), np.log1p(-h)).sum(axis=0)


def first_difference_s(natural, perturbed) -> float:
    """Where the perturbed clip's voice activity first departs from the natural one's."""
    times = []
    for k in (0, 1):
        a, b = natural.activity[k], perturbed.activity[k]
        for (s1, e1), (s2, e2) in zip(a, b):
            if abs(s1 - s2) > 0.02 or abs(e1 - e2) > 0.02:
                times.append(min(s1, s2))
                break
        else:
            if len(a) != len(b):
                times.append(min(len(a), len(b)) and a[min(len(a), len(b)) - 1][1])
    return min(times) if times else 0.0


def cut_out_cue_table(manifests, clips, turn_end, default) -> str:
    """The cut-out answers of the excise sets by the cue (words + P(question)) at the last IPU end
    before the edit: how much lexical evidence there is, and how the default ranks them."""
    rows = []
    for name, entries in manifests.items():
        if "excise" not in name:
            continue
        for e in entries:
            if e.type != "hold_instead_of_shift":
                continue
            natural, perturbed = load_conversation_json(e.natural), load_conversation_json(e.perturbed)
            t0 = first_difference_s(natural, perturbed)
            before = [c for c in clips[name][e.natural].cues[True] if c.time_s <= t0 + 0.05]
            if before:
                right = default(clips[name][e.perturbed]) > default(clips[name][e.natural])
                rows.append((before[-1].p_complete, right))
    lines = ["Cut-out answers of the excise sets by P(shift | words, P(question)) at the last IPU end before the "
             f"edit ({len(rows)} pairs with a cue there); timing-hazard's share ranked right:", "",
             "| P(shift) | pairs | timing-hazard right |", "|---|---|---|"]
    for lo, hi in ((0.0, 0.15), (0.15, 0.3), (0.3, 0.5), (0.5, 0.7), (0.7, 1.01)):
        sel = [r for p, r in rows if lo <= p < hi]
        share = f"{100 * np.mean(sel):.0f} %" if sel else "-"
        lines.append(f"| {lo:.2f}-{min(hi, 1):.2f} | {len(sel)} | {share} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    args = pair_set_arguments("/tmp/nat24w/selection.md", argv)

    folders = sets(Path(args.builder), Path(args.crosscheck))
    build_missing(args.swb, folders)
    manifests, sources = training_pairs(folders)
    turn_end, n_conv, n_sil = held_out_turn_end_model(args.swb, sources)
    print(f"word tables: {n_conv} training conversations not used by the pairs, {n_sil} silences", flush=True)
    model = load_timing_model()
    hist = fit_duration_likelihood(load_conversation(args.swb, i)
                                   for i in conversation_ids(args.swb, split="train")[:600])
    total = sum(h.sum() for h in hist.values())
    prior = {k: -np.log((hist[k].sum() + 0.5) / (total + 0.5 * len(KINDS))) for k in KINDS}

    def dl_nll(kind, d):
        h = hist[kind]
        return prior[kind] - np.log((h[np.searchsorted(EDGES_S, d)] + 0.5) / (h.sum() + 0.5 * len(h)))

    clips: dict[str, dict[Path, Clip]] = {}
    for name, entries in manifests.items():
        clips[name] = {}
        for e in entries:
            for p in (e.natural, e.perturbed):
                if p not in clips[name]:
                    clips[name][p] = clip_of(p, model, turn_end)
        print(f"{name}: {len(clips[name])} clips", flush=True)
    centre_base = logit(turn_end.base_rate)
    params = TimingParams()

    def th(weight=0.0, question=False, centre="base", flip=None):
        p = params if flip is None else replace(params, flip_cost_nats=flip)

        def f(c: Clip) -> float:
            shift = None
            if weight:
                shift = cue_logit_shift(c.cues[question], c.va, FRAME_RATE, weight,
                                        centre_base if centre == "base" else None)
            return score_log_likelihoods(hazard_ll(c, shift), c.flips, p).dialog_nll
        return f

    def who_next(weight, question=False, p=params):
        def f(c: Clip) -> float:
            h = who_next_hazards(c.h, c.cues[question], c.va, FRAME_RATE, weight, centre_base)
            ll = np.where(c.flip == 1, np.log(h), np.log1p(-h)).sum(axis=0)
            return score_log_likelihoods(ll, c.flips, p).dialog_nll
        return f

    def per_event(weight=0.0, question=False):
        def f(c: Clip) -> float:
            shift = None if not weight else cue_logit_shift(c.cues[question], c.va, FRAME_RATE, weight, centre_base)
            ll = hazard_ll(c, shift)
            return float((-ll - params.flip_cost_nats * c.flips).sum()) / max(1, len(c.events))
        return f

    def plus_dl(base, w):
        def f(c: Clip) -> float:
            return base(c) + w * float(np.mean([dl_nll(k, d) for k, d in c.events]))
        return f

    versions = {"timing-hazard (default)": th()}
    for q in (False, True):
        cue = "words+question" if q else "words"
        for w in (0.5, 1.0, 1.5, 2.0, 3.0):
            versions[f"timing-hazard + {cue} who-next cue x {w:g}"] = who_next(w, q)
    for q in (False, True):
        cue = "words+question" if q else "words"
        for w in (0.5, 1.0, 1.5, 2.0, 3.0):
            versions[f"timing-hazard + {cue} cue x {w:g}"] = th(w, q)
        for w in (1.0, 2.0):
            versions[f"timing-hazard + {cue} cue x {w:g}, speaker-median centre"] = th(w, q, "median")
    versions["cost per event"] = per_event()
    versions["cost per event + words cue x 1"] = per_event(1.0)
    for w in (0.5, 1.0):
        versions[f"timing-hazard + {w:g} x duration likelihood /event"] = plus_dl(th(), w)
        versions[f"timing-hazard + words cue x 1 + {w:g} x duration likelihood /event"] = plus_dl(th(1.0), w)

    summary = {}
    for vname, f in versions.items():
        cells = {}
        for sname, entries in manifests.items():
            cache = {p: f(c) for p, c in clips[sname].items()}
            right = {t: [] for t in TYPES}
            for e in entries:
                right[e.type].append(cache[e.perturbed] > cache[e.natural])
            nat = np.array([cache[e.natural] for e in entries])
            pert = np.array([cache[e.perturbed] for e in entries])
            diff = pert[:, None] - nat[None, :]
            c_index = float((diff > 0).sum() / max(1, (diff != 0).sum()))
            acc = {t: 100 * float(np.mean(v)) for t, v in right.items()}
            overall = 100 * float(np.mean([x for v in right.values() for x in v]))
            cells[sname] = (overall, acc, c_index)
        summary[vname] = cells
        print(vname, {s: f"{o:.1f}/h{a['hold_instead_of_shift']:.0f}/s{a['shift_instead_of_hold']:.0f}"
                      f"/min{min(a.values()):.0f}" for s, (o, a, _) in cells.items()}, flush=True)
    names = list(manifests)
    lines = [f"Word tables: {n_conv} training conversations not used by the pairs ({n_sil} silences).", "",
             "Per set: overall / late / early / hold (that set's form) / shift / BC / C-index.", "",
             "| version | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for vname, cells in summary.items():
        lines.append(f"| {vname} | " + " | ".join(
            f"{o:.1f} / {' / '.join(f'{a[t]:.0f}' for t in TYPES)} / {c:.3f}" for o, a, c in cells.values()) + " |")
    lines += ["", "Ranges over the sets (cut-out: excise sets; missing: mute sets):", "",
              "| version | worst type | overall | late | early | cut-out | missing | shift | BC | C-index |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for vname, cells in summary.items():
        def rng(vals):
            return f"{min(vals):.0f}-{max(vals):.0f}"
        ex = [a["hold_instead_of_shift"] for s, (o, a, c) in cells.items() if "excise" in s]
        mu = [a["hold_instead_of_shift"] for s, (o, a, c) in cells.items() if "mute" in s]
        worst = min(min(a.values()) for o, a, c in cells.values())
        lines.append(f"| {vname} | {worst:.0f} | {rng([o for o, a, c in cells.values()])} | "
                     + " | ".join(rng([a[t] for o, a, c in cells.values()]) for t in ("late_response", "early_entry"))
                     + f" | {rng(ex)} | {rng(mu)} | "
                     + " | ".join(rng([a[t] for o, a, c in cells.values()]) for t in ("shift_instead_of_hold", "excessive_backchannel"))
                     + f" | {min(c for o, a, c in cells.values()):.3f}-{max(c for o, a, c in cells.values()):.3f} |")
    # The choice: the mean of the worst type over the ten sets and the mean overall accuracy.
    lines += ["", "Ranked by the mean of the worst type (over all sets) and the mean overall accuracy:", "",
              "| version | worst type | mean overall | criterion |", "|---|---|---|---|"]
    ranked = []
    for vname, cells in summary.items():
        worst = min(min(a.values()) for o, a, c in cells.values())
        mean = float(np.mean([o for o, a, c in cells.values()]))
        ranked.append(((worst + mean) / 2, worst, mean, vname))
    for crit, worst, mean, vname in sorted(ranked, reverse=True):
        lines.append(f"| {vname} | {worst:.1f} | {mean:.1f} | {crit:.2f} |")
    lines += ["", cut_out_cue_table(manifests, clips, turn_end, versions["timing-hazard (default)"])]
    Path(args.out).write_text("\n".join(lines) + "\n")
    (Path(args.out).with_suffix(".json")).write_text(json.dumps(summary))
    print(f"written {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Development-time check: would a short silence at the splice explain the reference row measured
on hidden pairs? There the context-free duration likelihood has 82 % on the cut-out answer and 99 %
on shift instead of hold, where timing-hazard has 42.5 % and 97.5 %; on our generators the duration
likelihood has 35-39 % on the cut-out answer.

    PYTHONPATH=.:benchmarks .venv/bin/python benchmarks/splice_gap_probe.py EXCISE_FOLDER --out OUT
        [--swb /tmp/swb] [--gap-ms 20 40] [--seed 0]

The trace tested: where a generator joins two pieces of the timeline inside one speaker's speech,
a few frames of silence are left there (a rounding or a concatenation that drops a frame). Our
generators leave none. EXCISE_FOLDER is an `--hold-removal excise` folder of
`benchmarks/turnnat_validation.py` (OUT/GENERATOR-excise). Its two mirror edits are copied to OUT
twice, as built and with such a silence (a uniform --gap-ms long) in the first IPU after the splice:

- the cut-out answer: the speaker's IPU after the pause the cut left
  (`sliver_probe.pause_left_by_the_cut`);
- shift instead of hold: the holding speaker's first IPU after the inserted turn; the gap of the
  perturbed clip that starts where the natural clip has a pause opens that turn.

Both places are found from the clips alone, without the generator's notes. The silence starts
0.1-0.6 s into the IPU. Pairs where no place is found, or whose IPU is under 0.3 s, are left out and
counted. Both sets are scored by timing-hazard (`naturalness pairs`) and by turnnat_validation's
duration likelihood per event and per second, read two ways: with each speaker's speech joined
into IPUs across 0.2 s (as everywhere in these benchmarks) and with nothing joined (the raw voice
activity; its histograms are counted the same way on 600 training conversations). Printed: a
Markdown table of pair accuracy per type.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

from sliver_probe import pause_left_by_the_cut, probe_arguments, write_two_sets
from turnnat_validation import IPU_JOIN_S, clip_silences, duration_likelihood, fit_duration_likelihood, run
from naturalness.pairs import pairs_report, read_pairs_manifest, score_pairs
from turntaking.switchboard import conversation_ids, load_conversation

CUT_OUT, SHIFT = "hold_instead_of_shift", "shift_instead_of_hold"
MIN_IPU_S = 0.3
START_S = (0.1, 0.6)  # where in the IPU the silence starts


def resumption_after_the_insert(natural, perturbed):
    """(speaker, start) of the holding speaker's first IPU after the turn `perturbed` put into one
    of `natural`'s pauses, or None."""
    pause_starts = {round(p.start, 3) for p in clip_silences(natural)[1]}
    ipus, _, gaps = clip_silences(perturbed)
    opening = next((g for g in gaps if round(g.start, 3) in pause_starts), None)
    if opening is None:
        return None
    holder = 1 - opening.speaker
    return next(((holder, s) for s, _ in ipus[holder] if s >= opening.end), None)


def splice_point(entry: dict, natural, perturbed):
    """(speaker, start of the IPU after the splice) of a pair of the two mirror edits, or None."""
    if entry["type"] == CUT_OUT:
        pause = pause_left_by_the_cut(natural, perturbed)
        return None if pause is None else (pause.speaker, pause.end)
    return resumption_after_the_insert(natural, perturbed)


def with_gap(clip: dict, speaker: int, ipu_start: float, gap_s: float, rng: random.Random) -> dict | None:
    """`clip` (its JSON) with `gap_s` of silence early in the speaker's voice activity that begins
    at `ipu_start` (the IPU's first segment, which must be at least MIN_IPU_S long), or None."""
    segments = clip["vad"][speaker]
    i = next((i for i, (s, _) in enumerate(segments) if abs(s - ipu_start) < 1e-3), None)
    if i is None or segments[i][1] - segments[i][0] < MIN_IPU_S:
        return None
    start, end = segments[i]
    at = rng.uniform(start + START_S[0], min(start + START_S[1], end - gap_s - START_S[0]))
    clip["vad"][speaker] = segments[:i] + [[start, at], [at + gap_s, end]] + segments[i + 1:]
    return clip


def write_sets(folder: Path, out: Path, gap_ms: tuple[float, float], seed: int) -> tuple[dict, int]:
    """OUT/as-built and OUT/with-gap; returns (pairs written per type, pairs left out)."""
    rng = random.Random(seed)

    def add_gap(entry, natural, perturbed, clip):
        point = splice_point(entry, natural, perturbed)
        return None if point is None else with_gap(clip, *point, rng.uniform(*gap_ms) / 1000, rng)

    written, left_out = write_two_sets(folder, out, (CUT_OUT, SHIFT), "with-gap", add_gap)
    return {t: sum(e["type"] == t for e in written) for t in (CUT_OUT, SHIFT)}, left_out


def main(argv=None) -> int:
    ap, args = probe_arguments(argv, "--gap-ms", (20.0, 40.0))
    folder, out = Path(args.folder), Path(args.out)
    counts, left_out = write_sets(folder, out, tuple(args.gap_ms), args.seed)
    if not sum(counts.values()):
        ap.error(f"no cut-out or shift-instead-of-hold pair of {folder} has a splice to mark")
    train = conversation_ids(args.swb, split="train")[:600]
    rows: dict[str, dict[str, dict[str, float]]] = {}
    for name in ("as-built", "with-gap"):
        manifest = out / name / "manifest.jsonl"
        report = json.loads(run(["-m", "naturalness", "pairs", str(manifest), "--scorer", "timing-hazard", "--json"]))
        rows.setdefault("timing-hazard", {})[name] = {t: v["pair_accuracy"]["value"]
                                                      for t, v in report["per_type"].items()}
    entries = [read_pairs_manifest(out / name / "manifest.jsonl") for name in ("as-built", "with-gap")]
    for join_s, joined in ((IPU_JOIN_S, f"IPUs joined across {IPU_JOIN_S:g} s"), (0.0, "nothing joined")):
        hist = fit_duration_likelihood((load_conversation(args.swb, i) for i in train), join_s)
        for label, per_second in (("/event", False), ("/s", True)):
            for name, pairs in zip(("as-built", "with-gap"), entries):
                report = pairs_report(score_pairs(pairs, duration_likelihood(hist, per_second, join_s)))
                rows.setdefault(f"duration likelihood {label}, {joined}", {})[name] = {
                    t: v["pair_accuracy"]["value"] for t, v in report["per_type"].items()}
    print(f"{folder}: {counts[CUT_OUT]} cut-out and {counts[SHIFT]} shift-instead-of-hold pairs ({left_out} "
          f"left out), a silence of {args.gap_ms[0]:g}-{args.gap_ms[1]:g} ms at the splice\n\n"
          "| scorer | cut-out answer: as built -> with the silence | shift instead of hold: as built -> with the silence |\n"
          "|---|---|---|")
    for scorer, by_set in rows.items():
        cells = [f"{100 * by_set['as-built'][t]:.1f} -> {100 * by_set['with-gap'][t]:.1f}" for t in (CUT_OUT, SHIFT)]
        print(f"| {scorer} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

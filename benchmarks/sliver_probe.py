"""Development-time check: would a sliver of the removed answer, left in the pause by a cruder
cut, explain the reference row measured on hidden pairs (the context-free duration likelihood 82 %
on the cut-out answer, timing-hazard 42.5 %)?

    PYTHONPATH=.:benchmarks .venv/bin/python benchmarks/sliver_probe.py EXCISE_FOLDER --out OUT
        [--swb /tmp/swb] [--sliver-ms 20 80] [--seed 0]

EXCISE_FOLDER: an `--hold-removal excise` folder of `benchmarks/turnnat_validation.py`
(OUT/GENERATOR-excise). Its cut-out pairs ("hold_instead_of_shift") are copied to OUT twice: as
they are, and with a sliver of the other speaker's speech (a uniform --sliver-ms long, at a uniform
place) inside the pause the cut left. That pause is found without reading the generator's own
notes: the first pause of the perturbed clip that starts where the natural clip has a gap (the
speaker's turn end, which the answer followed). Pairs where none is found (a pause under the
0.2 s that joins IPUs is no pause) or the pause is too short for the sliver are left out and
counted. Both sets are scored by timing-hazard, timing-hazard-words (`naturalness pairs`) and
turnnat_validation's duration likelihood per event and per second; printed as a Markdown table
of pair accuracy.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

from turnnat_validation import clip_silences, duration_likelihood, fit_duration_likelihood, run
from naturalness.pairs import pairs_report, read_pairs_manifest, score_pairs
from turntaking.activity import load_conversation_json
from turntaking.switchboard import conversation_ids, load_conversation

CUT_OUT = "hold_instead_of_shift"


def pause_left_by_the_cut(natural, perturbed):
    """The pause (an Event) of `perturbed` that starts at one of `natural`'s gaps, or None."""
    gap_starts = {round(g.start, 3) for g in clip_silences(natural)[2]}
    return next((p for p in clip_silences(perturbed)[1] if round(p.start, 3) in gap_starts), None)


def write_two_sets(folder: Path, out: Path, types: tuple[str, ...], trace: str, add_trace) -> tuple[list[dict], int]:
    """OUT/as-built and OUT/TRACE: the pairs of `types` in `folder`, their perturbed clip as built
    and with `add_trace(entry, natural, perturbed, clip)` (the clips read, and the perturbed clip's
    JSON to change; None leaves the pair out). Returns (entries written, pairs left out)."""
    for name in ("as-built", trace):
        (out / name / "clips").mkdir(parents=True, exist_ok=True)
    written, left_out = [], 0
    for line in (folder / "manifest.jsonl").read_text().splitlines():
        entry = json.loads(line)
        if entry["type"] not in types:
            continue
        natural_text, perturbed_text = ((folder / entry[k]).read_text() for k in ("natural", "perturbed"))
        clips = (load_conversation_json(folder / entry[k]) for k in ("natural", "perturbed"))
        clip = add_trace(entry, *clips, json.loads(perturbed_text))
        if clip is None:
            left_out += 1
            continue
        for name, perturbed in (("as-built", perturbed_text), (trace, json.dumps(clip))):
            (out / name / entry["natural"]).write_text(natural_text)
            (out / name / entry["perturbed"]).write_text(perturbed)
        written.append((entry, line))
    for name in ("as-built", trace):
        (out / name / "manifest.jsonl").write_text("".join(line + "\n" for _, line in written))
    return [entry for entry, _ in written], left_out


def write_sets(folder: Path, out: Path, sliver_ms: tuple[float, float], seed: int) -> tuple[int, int]:
    """OUT/as-built and OUT/with-sliver; returns (pairs written, pairs left out)."""
    rng = random.Random(seed)

    def add_sliver(entry, natural, perturbed, clip):
        pause = pause_left_by_the_cut(natural, perturbed)
        length = rng.uniform(*sliver_ms) / 1000
        if pause is None or pause.end - pause.start < length + 0.02:
            return None
        start = rng.uniform(pause.start + 0.01, pause.end - length - 0.01)
        listener = 1 - pause.speaker
        clip["vad"][listener] = sorted(clip["vad"][listener] + [[start, start + length]])
        return clip

    written, left_out = write_two_sets(folder, out, (CUT_OUT,), "with-sliver", add_sliver)
    return len(written), left_out


def probe_arguments(argv, length_option: str, default_ms: tuple[float, float]):
    """(parser, arguments) of a probe's command line: EXCISE_FOLDER --out OUT [--swb SWB]
    [LENGTH_OPTION MIN MAX] [--seed N]; a folder without a manifest or a missing Switchboard folder
    ends it with one line."""
    ap = argparse.ArgumentParser()
    ap.add_argument("folder")
    ap.add_argument("--out", required=True)
    ap.add_argument("--swb", default="/tmp/swb")
    ap.add_argument(length_option, type=float, nargs=2, default=default_ms)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    if not (Path(args.folder) / "manifest.jsonl").is_file():
        ap.error(f"no manifest.jsonl in {args.folder}")
    if not Path(args.swb).is_dir():
        ap.error(f"no Switchboard folder at {args.swb}")
    return ap, args


def main(argv=None) -> int:
    ap, args = probe_arguments(argv, "--sliver-ms", (20.0, 80.0))
    folder, out = Path(args.folder), Path(args.out)
    written, left_out = write_sets(folder, out, tuple(args.sliver_ms), args.seed)
    if not written:
        ap.error(f"no cut-out pair of {folder} has a pause to put a sliver in")
    hist = fit_duration_likelihood(load_conversation(args.swb, i)
                                   for i in conversation_ids(args.swb, split="train")[:600])
    rows = {}
    for name in ("as-built", "with-sliver"):
        manifest = out / name / "manifest.jsonl"
        for scorer in ("timing-hazard", "timing-hazard-words"):
            report = json.loads(run(["-m", "naturalness", "pairs", str(manifest), "--scorer", scorer, "--json"]))
            rows.setdefault(scorer, {})[name] = report["pair_accuracy"]["value"]
        entries = read_pairs_manifest(manifest)
        for label, per_second in (("duration-likelihood/event", False), ("duration-likelihood/s", True)):
            report = pairs_report(score_pairs(entries, duration_likelihood(hist, per_second)))
            rows.setdefault(label, {})[name] = report["pair_accuracy"]["value"]
    print(f"{folder}: {written} cut-out pairs ({left_out} left out), sliver {args.sliver_ms[0]:g}-"
          f"{args.sliver_ms[1]:g} ms\n\n| scorer | as built | with a sliver |\n|---|---|---|")
    for scorer, by_set in rows.items():
        print(f"| {scorer} | {100 * by_set['as-built']:.1f} | {100 * by_set['with-sliver']:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

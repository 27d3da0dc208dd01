"""Check a pairs manifest for splice marks: does the perturbed clip of a pair hold more
very short silences inside one speaker's speech than its natural clip?

    PYTHONPATH=.:benchmarks .venv/bin/python benchmarks/splice_mark_count.py MANIFEST [--under-ms 50]

A generator that joins pieces of the timeline can leave a few frames of silence inside a speaker's
speech at the join (`benchmarks/splice_gap_probe.py` measures what such a mark does to the scores).
Natural Switchboard voice activity has few of them: 0.59 % of a speaker's silences between two
stretches of their own speech are under 50 ms, 0.03 % under 20 ms. For every pair this counts, in
each clip's raw voice activity (nothing joined), the silences shorter than --under-ms between two
segments of the same speaker, and prints per type: the pairs, the mean count in the natural and in
the perturbed clips, and the share of pairs whose perturbed clip has more. A generator that leaves
no marks has about as many in both clips; one that marks every splice has more in nearly every
perturbed clip of the types it splices. Reads the clips only; needs no Switchboard.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict

import numpy as np

from naturalness.pairs import read_pairs_manifest
from turntaking.activity import load_conversation_json
from turntaking.jsonfiles import JsonFileError


def short_silences(path, under_s: float) -> int:
    """How many silences shorter than `under_s` lie between two segments of one speaker."""
    conv = load_conversation_json(path)
    count = 0
    for segments in conv.activity:
        segments = sorted(segments)
        count += sum(0 < b[0] - a[1] < under_s for a, b in zip(segments, segments[1:]))
    return count


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("manifest")
    ap.add_argument("--under-ms", type=float, default=50.0)
    args = ap.parse_args(argv)
    try:
        entries = read_pairs_manifest(args.manifest)
        counts = defaultdict(list)
        for e in entries:
            counts[e.type].append((short_silences(e.natural, args.under_ms / 1000),
                                   short_silences(e.perturbed, args.under_ms / 1000)))
    except (OSError, ValueError, JsonFileError) as exc:
        ap.error(str(exc).splitlines()[0])
    print(f"{args.manifest}: silences under {args.under_ms:g} ms inside one speaker's speech\n\n"
          "| type | pairs | mean in natural clips | mean in perturbed clips | perturbed has more |\n|---|---|---|---|---|")
    for kind, pairs in sorted(counts.items()):
        natural, perturbed = np.array(pairs).T
        print(f"| {kind} | {len(pairs)} | {natural.mean():.2f} | {perturbed.mean():.2f} | "
              f"{100 * np.mean(perturbed > natural):.1f} % |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Does the turnnat-va scorer gain from joining regions at scoring as its training did?

    .venv/bin/python -m annotation build-pairs /tmp/swb --split val --per-type 80 --seed 0 --out /tmp/tv/pairs
    .venv/bin/python benchmarks/turnnat_merge_gap.py /tmp/tv/pairs/manifest.jsonl

Scores every pair with `NaturalnessParams.merge_gap_s` = 0.0 (the scoring default) and 0.18 s
(`TrainOptions.tbu_merge_gap_s`, what the packaged judge was trained with) and prints pair
accuracy per type and the C-index of each (see "Joining speech regions" in turntaking/events.py).
"""

from __future__ import annotations

import sys
from pathlib import Path

from judge.reports import load_judge, predict_conversations
from judge.training import TrainOptions
from naturalness.pairs import pairs_report, read_pairs_manifest, score_pairs
from naturalness.turnnat_va import NaturalnessParams, score_conversation
from speech.recordings import load_recording


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        sys.exit("usage: turnnat_merge_gap.py MANIFEST")
    entries = read_pairs_manifest(Path(argv[0]))
    model, _ = load_judge()
    files = list(dict.fromkeys(p for e in entries for p in (e.natural, e.perturbed)))
    conversations = [load_recording(p, words=False) for p in files]
    predictions = predict_conversations(model, conversations)
    for gap in (NaturalnessParams.merge_gap_s, TrainOptions.tbu_merge_gap_s):
        params = NaturalnessParams(merge_gap_s=gap)
        scores = {p: score_conversation(c, model, params, pr) for p, c, pr in zip(files, conversations, predictions)}
        report = pairs_report(score_pairs(entries, scores.__getitem__))
        per_type = ", ".join(f"{t} {100 * v['pair_accuracy']['value']:.1f}" for t, v in report["per_type"].items())
        print(f"merge gap {gap:.2f} s: pair accuracy {100 * report['pair_accuracy']['value']:.1f} % "
              f"({per_type}); C-index {report['c_index']['value']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A scorer on natural/perturbed pairs: DeltaNLL, pairwise accuracy, C-index (TurnNat IV-D).

MANIFEST is JSONL, one pair a line:
    {"pair_id": ..., "type": ..., "natural": PATH, "perturbed": PATH, ...}
PATHs are relative to the manifest's folder: two-channel audio files or voice-activity JSON.

    DeltaNLL_i     = dialog_nll(perturbed_i) - dialog_nll(natural_i)   (> 0: the perturbed clip
                     is judged less natural, as it should be)
    pair accuracy  = share of pairs with DeltaNLL > 0, with a Wilson 95 % interval
    C-index        = P(dialog_nll of a perturbed clip > that of a natural clip) over all
                     perturbed x natural clips of the manifest, ties excluded. Its interval is a
                     Wilson interval with the number of pairs as the sample size (the N x N
                     comparisons are not independent, so their count would overstate certainty).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from naturalness.score import Score
from turntaking.intervals import concordance_counts, wilson_interval
from turntaking.pairs_manifest import read_pairs_manifest as read_manifest_entries


@dataclass(frozen=True)
class PairEntry:
    pair_id: str
    type: str
    natural: Path
    perturbed: Path


@dataclass(frozen=True)
class PairResult:
    entry: PairEntry
    natural: Score
    perturbed: Score

    @property
    def delta_nll(self) -> float:
        return self.perturbed.dialog_nll - self.natural.dialog_nll


def read_pairs_manifest(path) -> list[PairEntry]:
    """The manifest's pairs (turntaking.pairs_manifest reads and checks it), paths resolved."""
    path = Path(path)
    return [PairEntry(str(item["pair_id"]), str(item["type"]), path.parent / item["natural"],
                      path.parent / item["perturbed"]) for item in read_manifest_entries(path)]


def score_pairs(entries: list[PairEntry], score_file) -> list[PairResult]:
    """`score_file(path) -> Score`; each file is scored once even if shared by pairs."""
    cache: dict[Path, Score] = {}

    def score(p: Path) -> Score:
        if p not in cache:
            cache[p] = score_file(p)
        return cache[p]

    return [PairResult(e, score(e.natural), score(e.perturbed)) for e in entries]


def _accuracy(deltas: np.ndarray) -> dict:
    correct = int((deltas > 0).sum())
    n = int(deltas.size)
    return {"value": correct / n if n else None, "correct": correct, "n": n,
            "wilson_95": list(wilson_interval(correct, n)) if n else None}


def _c_index(perturbed: np.ndarray, natural: np.ndarray, n_pairs: int) -> dict:
    concordant, discordant, ties = concordance_counts(perturbed, natural)
    untied = concordant + discordant
    value = concordant / untied if untied else None
    interval = None
    if value is not None and n_pairs:
        interval = list(wilson_interval(int(round(value * n_pairs)), n_pairs))
    return {"value": value, "concordant": concordant, "discordant": discordant, "ties": ties,
            "wilson_95": interval}


def _summary(results: list[PairResult]) -> dict:
    deltas = np.array([r.delta_nll for r in results])
    # Each distinct clip enters the C-index once, even when pairs share a natural clip.
    naturals = {r.entry.natural: r.natural.dialog_nll for r in results}
    perturbeds = {r.entry.perturbed: r.perturbed.dialog_nll for r in results}
    return {
        "pairs": len(results),
        "pair_accuracy": _accuracy(deltas),
        "c_index": _c_index(np.array(list(perturbeds.values())), np.array(list(naturals.values())), len(results)),
        "mean_delta_nll": float(deltas.mean()) if deltas.size else None,
    }


def pairs_report(results: list[PairResult]) -> dict:
    by_type: dict[str, list[PairResult]] = defaultdict(list)
    for r in results:
        by_type[r.entry.type].append(r)
    report = _summary(results)
    report["per_type"] = {t: _summary(rs) for t, rs in sorted(by_type.items())}
    report["pair_scores"] = [
        {"pair_id": r.entry.pair_id, "type": r.entry.type, "natural_nll": r.natural.dialog_nll,
         "perturbed_nll": r.perturbed.dialog_nll, "delta_nll": r.delta_nll}
        for r in results
    ]
    return report

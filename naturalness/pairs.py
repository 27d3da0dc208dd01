"""A scorer on natural/perturbed pairs: score difference, pairwise accuracy, C-index (TurnNat IV-D's
measures, applied to any scorer).

MANIFEST is JSONL, one pair a line:
    {"pair_id": ..., "type": ..., "natural": PATH, "perturbed": PATH, ...}
PATHs are relative to the manifest's folder: two-channel audio files or voice-activity JSON.

    delta_nll_i    = dialog_nll(perturbed_i) - dialog_nll(natural_i)   (> 0: the perturbed clip
                     is judged less natural, as it should be)
    pair accuracy  = share of pairs with delta_nll > 0

`delta_nll` is the score difference, natural minus perturbed in naturalness; it is a DeltaNLL
(TurnNat's) only for a scorer whose score is a likelihood (turnnat-va, durations), and a cost
difference for timing-hazard: the scorer's `units` say which. The field names stay for the
reports and benchmarks that read them.
    C-index        = P(dialog_nll of a perturbed clip > that of a natural clip) over all
                     perturbed x natural clips of the manifest, ties excluded.

Both get a 95 % interval by a bootstrap over source conversations (a manifest entry's "source"):
pairs cut from one conversation share its speakers and habits, so they are not independent,
and the N x N comparisons of the C-index even less so. Pairs without a source are clustered by
their natural clip (the unit is "natural clips" when no pair has a source). With fewer than
two clusters there is no interval (None), and `interval` says so.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from naturalness.score import Score
from turntaking.intervals import (
    cluster_bootstrap_interval,
    concordance_counts,
    interval_label,
    proportion_interval,
    ratio_of_sums_interval,
    wilson_interval,
)
from turntaking.pairs_manifest import read_pairs_manifest as read_manifest_entries


@dataclass(frozen=True)
class PairEntry:
    pair_id: str
    type: str
    natural: Path
    perturbed: Path
    source: str | None = None  # the conversation the pair was cut from


@dataclass(frozen=True)
class PairResult:
    entry: PairEntry
    natural: Score
    perturbed: Score

    @property
    def delta_nll(self) -> float:
        """dialog_nll(perturbed) - dialog_nll(natural): > 0 when the scorer finds the perturbed clip
        less natural.

        >>> from types import SimpleNamespace as Scored  # any object with a dialog_nll is a Score here
        >>> entry = PairEntry("1", "shift", Path("natural.json"), Path("perturbed.json"))
        >>> PairResult(entry, natural=Scored(dialog_nll=1.0), perturbed=Scored(dialog_nll=3.0)).delta_nll
        2.0
        """
        return self.perturbed.dialog_nll - self.natural.dialog_nll


def read_pairs_manifest(path) -> list[PairEntry]:
    """The manifest's pairs (turntaking.pairs_manifest reads and checks it), paths resolved."""
    path = Path(path)
    return [PairEntry(str(item["pair_id"]), str(item["type"]), path.parent / item["natural"],
                      path.parent / item["perturbed"], None if item.get("source") is None else str(item["source"]))
            for item in read_manifest_entries(path)]


def score_pairs(entries: list[PairEntry], score_file) -> list[PairResult]:
    """`score_file(path) -> Score`; each file is scored once even if shared by pairs.

    >>> from types import SimpleNamespace as Scored
    >>> scored = []
    >>> def score_file(path):
    ...     scored.append(path)
    ...     return Scored(dialog_nll={"n": 1.0, "p": 3.0, "q": 0.5}[path.name])
    >>> entries = [PairEntry("1", "shift", Path("n"), Path("p")), PairEntry("2", "pause", Path("n"), Path("q"))]
    >>> results = score_pairs(entries, score_file)
    >>> [r.delta_nll for r in results], len(scored)  # "n" scored once for both pairs
    ([2.0, -0.5], 3)
    """
    cache: dict[Path, Score] = {}

    def score(p: Path) -> Score:
        if p not in cache:
            cache[p] = score_file(p)
        return cache[p]

    return [PairResult(e, score(e.natural), score(e.perturbed)) for e in entries]


def _sources(results: list[PairResult]) -> tuple[list[str], str]:
    """(each pair's cluster, their name): its source conversation; without one, its natural clip
    (pairs that share a natural clip are not independent either)."""
    keys = [r.entry.source if r.entry.source is not None else f"natural clip {r.entry.natural}" for r in results]
    return keys, ("source conversations" if any(r.entry.source is not None for r in results) else "natural clips")


def _accuracy(deltas: np.ndarray, keys: list[str], unit: str) -> dict:
    correct = int((deltas > 0).sum())
    n = int(deltas.size)
    sources = sorted(set(keys))
    per_source = {k: [0, 0] for k in sources}
    for key, delta in zip(keys, deltas):
        per_source[key][0] += int(delta > 0)
        per_source[key][1] += 1
    num, den = zip(*per_source.values()) if per_source else ((), ())
    interval = proportion_interval(num, den)
    return {"value": correct / n if n else None, "correct": correct, "n": n, "sources": len(sources),
            "interval_95": None if interval is None else list(interval), "interval": interval_label(len(sources), unit)}


def _c_index(results: list[PairResult], keys: list[str], unit: str) -> dict:
    # Each distinct clip enters once, even when pairs share a natural clip, with its pair's source.
    naturals = {r.entry.natural: (k, r.natural.dialog_nll) for r, k in zip(results, keys)}
    perturbeds = {r.entry.perturbed: (k, r.perturbed.dialog_nll) for r, k in zip(results, keys)}
    sources = sorted(set(keys))
    nat = [np.array([v for k, v in naturals.values() if k == s]) for s in sources]
    pert = [np.array([v for k, v in perturbeds.values() if k == s]) for s in sources]
    # concordant[i, j], untied[i, j]: perturbed clips of source i against natural clips of source j.
    counts = np.array([[concordance_counts(p, q)[:2] for q in nat] for p in pert], dtype=float).reshape(
        len(sources), len(sources), 2)
    concordant, discordant = int(counts[..., 0].sum()), int(counts[..., 1].sum())
    ties = len(perturbeds) * len(naturals) - concordant - discordant
    untied = concordant + discordant
    value = concordant / untied if untied else None
    interval = None
    if value is not None:
        untied_counts = counts[..., 0] + counts[..., 1]

        def resampled(w):  # the C-index of a sample holding source i w[i] times (nan: all tied)
            with np.errstate(invalid="ignore", divide="ignore"):
                return (np.einsum("...i,ij,...j->...", w, counts[..., 0], w)
                        / np.einsum("...i,ij,...j->...", w, untied_counts, w))

        interval = cluster_bootstrap_interval(resampled, len(sources))
        if value in (0.0, 1.0) and len(sources) >= 2:  # no resample differs (see proportion_interval)
            interval = wilson_interval(int(value) * len(sources), len(sources))
    return {"value": value, "concordant": concordant, "discordant": discordant, "ties": ties,
            "interval_95": None if interval is None else list(interval), "interval": interval_label(len(sources), unit)}


def _summary(results: list[PairResult]) -> dict:
    deltas = np.array([r.delta_nll for r in results])
    keys, unit = _sources(results)
    sources = sorted(set(keys))
    delta_sums = [float(deltas[[k == s for k in keys]].sum()) for s in sources]
    pair_counts = [keys.count(s) for s in sources]
    mean_interval = ratio_of_sums_interval(delta_sums, pair_counts)
    return {
        "pairs": len(results),
        "sources": len(sources),
        "interval": interval_label(len(sources), unit),
        "pair_accuracy": _accuracy(deltas, keys, unit),
        "c_index": _c_index(results, keys, unit),
        "mean_delta_nll": float(deltas.mean()) if deltas.size else None,
        "mean_delta_nll_interval_95": None if mean_interval is None else list(mean_interval),
    }


def pairs_report(results: list[PairResult]) -> dict:
    """Pair accuracy, C-index and mean delta_nll with their intervals over source conversations,
    overall and per perturbation type, and every pair's scores.

    Natural clips 1, 2, 1 and perturbed 3, 1.5, 2: deltas 2, -0.5, 1 (2 of 3 pairs right); of the
    9 perturbed x natural comparisons 7 are concordant, 1 discordant, 1 tied: C = 7 / 8.

    >>> from types import SimpleNamespace as Scored
    >>> results = [PairResult(PairEntry(str(i), "shift", Path(f"n{i}"), Path(f"p{i}"), source=f"conv{i}"),
    ...                       Scored(dialog_nll=n), Scored(dialog_nll=p))
    ...            for i, n, p in ((1, 1, 3), (2, 2, 1.5), (3, 1, 2))]
    >>> report = pairs_report(results)
    >>> report["pair_accuracy"]["correct"], report["c_index"]["value"], round(report["mean_delta_nll"], 3)
    (2, 0.875, 0.833)
    """
    by_type: dict[str, list[PairResult]] = defaultdict(list)
    for r in results:
        by_type[r.entry.type].append(r)
    report = _summary(results)
    report["per_type"] = {t: _summary(rs) for t, rs in sorted(by_type.items())}
    report["pair_scores"] = [
        {"pair_id": r.entry.pair_id, "type": r.entry.type, "source": r.entry.source, "natural_nll": r.natural.dialog_nll,
         "perturbed_nll": r.perturbed.dialog_nll, "delta_nll": r.delta_nll}
        for r in results
    ]
    return report

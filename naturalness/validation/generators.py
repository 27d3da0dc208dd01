"""The pair generators the scorers are validated on, each a function of (corpus, form) -> manifest.

- `builder`: the project's generator (annotation/perturbations.py, `annotation build-pairs`).
- `crosscheck`: a second generator written from the TurnNat paper's text alone
  (annotation/crosscheck_pairs.py); `crosscheck-equal-length` cuts the perturbed clip to the
  natural clip's duration around the edit, as the hidden reference pairs probably are.
- `blind`: a third, written from the paper's text by an author who had not read the other two or
  the scorers (annotation/blind_pairs.py), with its own ranges and cropping.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from annotation import blind_pairs
from annotation.benchmark import write_benchmark
from annotation.crosscheck_pairs import CrosscheckParams, build_crosscheck_pairs, params_dict, write_crosscheck_pairs
from annotation.perturbations import PerturbationParams, build_pairs
from turntaking.switchboard import conversation_ids, load_conversation

GENERATORS = ("builder", "crosscheck", "crosscheck-equal-length", "blind")
FORMS = ("mute", "excise")


@dataclass(frozen=True)
class PairSource:
    """The conversations pairs are cut from, and how many pairs of each type from which seed."""

    swb: Path
    split: str
    per_type: int
    seed: int

    @cached_property
    def conversations(self) -> list:
        return [load_conversation(self.swb, i) for i in conversation_ids(self.swb, split=self.split)]


def build(generator: str, form: str, source: PairSource, out: Path) -> Path:
    """Build one generator's pairs in one form under `out`; returns the manifest."""
    if generator == "builder":
        params = PerturbationParams(hold_removal=form)
        pairs = build_pairs(source.conversations, per_type=source.per_type, seed=source.seed, params=params)
        return write_benchmark(pairs, out, f"switchboard {source.split}", source.seed, source.per_type, params)
    if generator in ("crosscheck", "crosscheck-equal-length"):
        equal_length = generator == "crosscheck-equal-length"
        params = CrosscheckParams()
        pairs = build_crosscheck_pairs(source.conversations, source.per_type, source.seed, form, params,
                                       equal_length=equal_length)
        return write_crosscheck_pairs(pairs, out, {
            "source": f"switchboard {source.split}", "split": source.split, "seed": source.seed,
            "per_type": source.per_type, "hold_removal": form, "equal_length": equal_length,
            "params": params_dict(params)})
    if generator == "blind":
        manifest, _ = blind_pairs.build(str(source.swb), source.split, source.per_type, source.seed, form, out)
        return manifest
    raise ValueError(f"unknown generator {generator!r} (choose from {', '.join(GENERATORS)})")

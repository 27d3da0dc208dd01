"""`python -m naturalness validate`: build every generator's pairs in both forms, score them with
every registered scorer and the yardsticks, and write one result file per generator and form.

A result file holds only summaries (pair accuracy with its Wilson interval over pairs and its
bootstrap interval over source conversations, C-index), rounded to 6 decimals, and no path, so
the same corpus, split, seed and pairs per type give the same bytes on any machine.

`timing-hazard-words`' question cue was fitted on dialog acts of half of the validation
conversations (judge/checkpoints/turn_end.json, `questions.provenance.conversation_ids`), so its
column is also given over the pairs of the other validation conversations only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from judge.turn_end import load_turn_end_model
from naturalness.pairs import PairResult, pairs_report, read_pairs_manifest, score_pairs
from naturalness.reports import pairs_from_manifest
from naturalness.score import NllScore
from naturalness.validation.comparators import duration_likelihood, fit_duration_histograms, naive_rule
from naturalness.validation.generators import PairSource, build
from naturalness.validation.tables import RESULTS_DIR
from turntaking.intervals import wilson_interval
from turntaking.switchboard import conversation_ids, load_conversation

WORDS_SCORER = "timing-hazard-words"
HELD_OUT = f"{WORDS_SCORER} (question cue held out)"


@dataclass(frozen=True)
class Settings:
    """What one validation run measures: which pairs, scored by what."""

    split: str = "val"
    per_type: int = 80
    seed: int = 0
    comparator_conversations: int = 600  # training conversations of the duration histograms
    scorers: tuple[str, ...] = ()

    def as_dict(self) -> dict:
        return {"split": self.split, "per_type": self.per_type, "seed": self.seed,
                "comparator_conversations": self.comparator_conversations}


@dataclass(frozen=True)
class StoredScore(NllScore):
    """A clip's score read back from a pairs report."""

    nll: float

    scorer: ClassVar[str] = "stored"

    @property
    def dialog_nll(self) -> float:
        return self.nll


def _rounded(x):
    if isinstance(x, float):
        return round(x, 6)
    if isinstance(x, dict):
        return {k: _rounded(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_rounded(v) for v in x]
    return x


def summary(report: dict) -> dict:
    """The figures the tables show, of one report and of each type in it."""
    def figures(s: dict) -> dict:
        a = s["pair_accuracy"]
        wilson = list(wilson_interval(a["correct"], a["n"])) if a["n"] else None
        return _rounded({"pairs": s["pairs"], "correct": a["correct"], "accuracy": a["value"],
                         "wilson_95": wilson, "bootstrap_95": a["interval_95"],
                         "c_index": s["c_index"]["value"], "c_index_bootstrap_95": s["c_index"]["interval_95"]})

    return {**figures(report), "per_type": {t: figures(s) for t, s in report["per_type"].items()}}


def question_cue_sources() -> set[str]:
    """The conversations whose dialog acts trained the packaged turn-end model's question cue."""
    model = load_turn_end_model()
    ids = [] if model.questions is None else model.questions.provenance.get("conversation_ids", [])
    return {f"sw{i}" for i in ids}


def score_manifest(manifest: Path, scorers, histograms) -> dict[str, dict]:
    """{column: pairs report} of every scorer and yardstick on one manifest."""
    entries = read_pairs_manifest(manifest)
    reports = {name: pairs_from_manifest(manifest, name) for name in scorers}
    for name, per_second in (("duration-likelihood/event", False), ("duration-likelihood/s", True)):
        reports[name] = pairs_report(score_pairs(entries, duration_likelihood(histograms, per_second)))
    reports["naive rule timed/s"] = pairs_report(score_pairs(entries, naive_rule(timed=True)))
    if WORDS_SCORER in reports:
        held_out = {e.source for e in entries} - question_cue_sources()
        by_id = {e.pair_id: e for e in entries}
        results = [PairResult(by_id[p["pair_id"]], StoredScore(p["natural_nll"]), StoredScore(p["perturbed_nll"]))
                   for p in reports[WORDS_SCORER]["pair_scores"] if p["source"] in held_out]
        reports[HELD_OUT] = pairs_report(results)
    return reports


def validate(swb: Path, work: Path, settings: Settings, generators, forms, results_dir: Path = RESULTS_DIR,
             log=print) -> list[Path]:
    """Build, score and write `results_dir/GENERATOR-FORM.json` for every generator and form."""
    train = conversation_ids(swb, split="train")[: settings.comparator_conversations]
    histograms = fit_duration_histograms(load_conversation(swb, i) for i in train)
    source = PairSource(swb, settings.split, settings.per_type, settings.seed)
    results_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for generator in generators:
        for form in forms:
            manifest = build(generator, form, source, work / f"{generator}-{form}")
            reports = score_manifest(manifest, settings.scorers, histograms)
            result = {"generator": generator, "form": form, **settings.as_dict(),
                      "columns": {name: summary(report) for name, report in reports.items()}}
            path = results_dir / f"{generator}-{form}.json"
            path.write_text(json.dumps(result, indent=1) + "\n")
            log(f"{generator} {form}: {len(read_pairs_manifest(manifest))} pairs -> {path}")
            written.append(path)
    return written

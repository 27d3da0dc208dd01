"""The naturalness scorers a researcher can choose, by name.

    timing-hazard   (default) likelihood of the whole timing under human conversation, in context
                    (judge/timing_naturalness.py, packaged judge/checkpoints/timing_hazard.npz)
    durations       context-free baseline: mean NLL of gap, pause and overlap durations
                    (judge/duration_baseline.py, packaged judge/checkpoints/durations.json)
    turnnat-paper   the TurnNat paper's DialogNLL over turn-boundary units of the GRU judge's
                    future voice-activity head (judge/naturalness.py, judge_va.pt), unchanged

Every scorer turns a `Conversation` into a score with `dialog_nll` (higher = less natural),
`naturalness` (= -dialog_nll) and `as_dict()`. The three scales differ (nats per second, nats per
event, nats per frame): compare dialogues within one scorer, never across scorers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Callable

from judge.duration_baseline import DurationModel, DurationModelError
from judge.naturalness import NaturalnessParams, score_conversation
from judge.timing_naturalness import SCORER_NAME as TIMING
from judge.timing_naturalness import (
    TimingParams,
    check_manifest_sha256,
    load_timing_model,
    manifest_path,
    packaged_model_path,
    score_timing,
)
from storage.files import sha256_file

DURATIONS = "durations"
TURNNAT_PAPER = "turnnat-paper"
SCORERS = (TIMING, DURATIONS, TURNNAT_PAPER)
DEFAULT_SCORER = TIMING
DURATIONS_FILE = "durations.json"

UNITS = {TIMING: "nats/s", DURATIONS: "nats/event", TURNNAT_PAPER: "nats/frame (DialogNLL)"}


@dataclass(frozen=True)
class Scorer:
    name: str
    score: Callable[..., object]  # score(conv) or, where `takes_cues`, score(conv, cues)
    model_file: str
    params: dict
    takes_cues: bool = False  # judge.turn_cue audio cues (timing-hazard only)

    @property
    def units(self) -> str:
        return UNITS[self.name]


def packaged_durations_path() -> Path:
    return Path(str(resources.files("judge").joinpath("checkpoints"))) / DURATIONS_FILE


def load_durations_model(path=None) -> DurationModel:
    path = Path(path) if path else packaged_durations_path()
    if path.is_file():
        check_manifest_sha256(path, DurationModelError)
    return DurationModel.load(path)


def load_scorer(name: str = DEFAULT_SCORER, model_file=None) -> Scorer:
    """A scorer by name; `model_file` replaces its packaged model (a judge checkpoint for turnnat-paper)."""
    if name == TIMING:
        model = load_timing_model(model_file)
        params = TimingParams()
        return Scorer(name, lambda conv, cues=None: score_timing(conv, model, params, cues),
                      str(model_file or "packaged"), params.as_dict(), takes_cues=True)
    if name == DURATIONS:
        model = load_durations_model(model_file)
        return Scorer(name, model.score, str(model_file or "packaged"), {})
    if name == TURNNAT_PAPER:
        from judge.model import load_checkpoint  # torch: only for this scorer

        judge = load_checkpoint(model_file)
        params = NaturalnessParams()
        return Scorer(name, lambda conv: score_conversation(conv, judge, params), str(model_file or "packaged"),
                      params.as_dict())
    raise ValueError(f"unknown naturalness scorer {name!r} (choose from {', '.join(SCORERS)})")


def scorer_reference(name: str) -> dict:
    """Human-human naturalness by window length, recorded when the scorer's model was fitted
    ({length_s: {"mean", "sd", "windows"}}); empty when the scorer has none."""
    if name != TIMING:
        return {}
    manifest = manifest_path(packaged_model_path())
    if not manifest.is_file():
        return {}
    return json.loads(manifest.read_text()).get("human_reference", {}).get("naturalness_by_window_s", {})


def model_sha256(name: str, model_file=None) -> str:
    """The sha256 of the model file a scorer uses (the packaged one unless `model_file`)."""
    if model_file:
        return sha256_file(model_file)
    if name == TIMING:
        return sha256_file(packaged_model_path())
    if name == DURATIONS:
        return sha256_file(packaged_durations_path())
    raise ValueError(f"{name}: its model is a judge checkpoint (see judge.model)")

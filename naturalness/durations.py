"""The context-free duration baseline of dialogue naturalness (scorer name `durations`).

Every turn-taking event of a dialogue (`turntaking.events`: gaps, pauses, overlaps) is scored on its
own, with no context, against human-human conversation:

    NLL(event) = -log P(kind) - log P(duration bin | kind)

P(kind) is how often gaps, pauses and overlaps occur among all events, P(duration bin | kind) a
histogram of durations in 40 log-spaced bins (10 ms .. 30 s), add-half smoothed. A dialogue's
score is the mean NLL of its events (higher = less natural). The packaged model is
naturalness/checkpoints/durations.json, made by `python -m naturalness fit-scorers SWB`. It is the yardstick the default
scorer (`naturalness.timing_hazard`) must beat: it knows what a typical gap is, but not whose
turn it was, how long anyone had been speaking or silent, or what came before.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np

from naturalness.model_files import check_manifest_sha256, packaged_path, write_manifest
from naturalness.score import NllScore, Score, UnscorableDialogue, refuse_cues, require_speech, score_voice_activity
from naturalness.turn_cue import TurnEndCue
from storage.files import sha256_file
from turntaking.activity import Conversation
from turntaking.events import EventParams, detect_events
from turntaking.jsonfiles import JsonFileError, read_json

NAME = "durations"
MODEL_FILE = "durations.json"

KINDS = ("gap", "pause", "overlap")
EDGES_S = np.exp(np.linspace(np.log(0.01), np.log(30.0), 41))


class DurationModelError(JsonFileError):
    """A duration model file that is missing or malformed."""


def event_durations(conv: Conversation, events: EventParams = EventParams()) -> list[tuple[str, float]]:
    """(kind, duration) of every gap, pause and overlap, from voice activity alone."""
    ev = detect_events(Conversation(conv.duration, conv.activity, None), events)
    return ([("gap", e.duration) for e in ev.gaps] + [("pause", e.duration) for e in ev.pauses]
            + [("overlap", e.duration) for e in ev.overlaps])


@dataclass(frozen=True)
class DurationScore(NllScore):
    mean_event_nll: float
    n_events: int

    scorer: ClassVar[str] = NAME

    @property
    def dialog_nll(self) -> float:
        return self.mean_event_nll


@dataclass(frozen=True)
class DurationModel:
    histograms: dict  # kind -> (len(EDGES_S) + 1,) counts
    meta: dict

    @classmethod
    def fit(cls, conversations, events: EventParams = EventParams(), meta: dict | None = None) -> "DurationModel":
        hist = {k: np.zeros(len(EDGES_S) + 1) for k in KINDS}
        n = 0
        for conv in conversations:
            n += 1
            for kind, d in event_durations(conv, events):
                hist[kind][np.searchsorted(EDGES_S, d)] += 1
        return cls({k: v.tolist() for k, v in hist.items()}, {**(meta or {}), "conversations": n,
                                                               "events": events.as_dict()})

    def event_nll(self, kind: str, duration: float) -> float:
        h = np.asarray(self.histograms[kind], dtype=float)
        total = sum(float(np.sum(v)) for v in self.histograms.values())
        p_kind = (h.sum() + 0.5) / (total + 0.5 * len(KINDS))
        p_bin = (h[np.searchsorted(EDGES_S, duration)] + 0.5) / (h.sum() + 0.5 * len(h))
        return float(-np.log(p_kind) - np.log(p_bin))

    def score(self, conv: Conversation) -> DurationScore:
        nlls = [self.event_nll(k, d) for k, d in event_durations(conv)]
        if not nlls:
            raise UnscorableDialogue(f"{conv.source or 'dialogue'}: no gap, pause or overlap to score")
        return DurationScore(float(np.mean(nlls)), len(nlls))

    def save(self, path) -> None:
        Path(path).write_text(json.dumps({"edges_s": EDGES_S.tolist(), "histograms": self.histograms,
                                          "meta": self.meta}, indent=1))

    @classmethod
    def load(cls, path) -> "DurationModel":
        data = read_json(path, "duration model", DurationModelError)
        try:
            hist = {k: list(map(float, data["histograms"][k])) for k in KINDS}
        except (KeyError, TypeError, ValueError) as exc:
            raise DurationModelError(f"{path}: not a duration model ({exc})") from None
        if not np.allclose(data.get("edges_s", []), EDGES_S) or any(len(v) != len(EDGES_S) + 1 for v in hist.values()):
            raise DurationModelError(f"{path}: duration bins differ from this code's")
        return cls(hist, data.get("meta", {}))


def packaged_durations_path() -> Path:
    return packaged_path(MODEL_FILE)


def load_durations_model(path=None) -> DurationModel:
    """The duration model at `path` (default: the packaged one), its sha256 checked against its manifest."""
    path = Path(path) if path else packaged_durations_path()
    if path.is_file():
        check_manifest_sha256(path, DurationModelError)
    return DurationModel.load(path)


def save_durations_model(model: DurationModel, path) -> dict:
    """Write the model and its manifest (sha256, what it was fitted on); return the manifest."""
    path = Path(path)
    model.save(path)
    return write_manifest(path, {"scorer": NAME, "meta": model.meta})


@dataclass(frozen=True)
class DurationsScorer:
    """The `durations` scorer with its model (naturalness.score.Scorer)."""

    model: DurationModel
    model_path: Path

    name: ClassVar[str] = NAME
    units: ClassVar[str] = "nats/event (NLL)"
    takes_cues: ClassVar[bool] = False
    needs_judge: ClassVar[bool] = False

    @classmethod
    def load(cls, model_file=None) -> DurationsScorer:
        path = Path(model_file) if model_file else packaged_durations_path()
        return cls(load_durations_model(path), path)

    @property
    def params(self) -> dict:
        return {}  # the histograms are the model; nothing to set

    @property
    def reference(self) -> dict:
        return {}

    def identity(self) -> dict:
        return {"scorer": self.name, "model_sha256": sha256_file(self.model_path)}

    def score(self, conversation: Conversation, cues: Sequence[TurnEndCue] | None = None) -> DurationScore:
        refuse_cues(self.name, cues)
        require_speech(conversation)
        return self.model.score(conversation)

    def score_recording(self, path) -> Score:
        return score_voice_activity(self, path)

    def score_recordings(self, paths) -> Iterator[Score]:
        return (self.score_recording(p) for p in paths)

"""The `turnnat-va` naturalness scorer: TurnNat's pooling (DialogNLL over turn-taking boundary
units) of the future voice-activity head of this project's judge (`judge.model`; its packaged
checkpoint judge/checkpoints/judge_va.pt, or another judge checkpoint).

What is the paper's and what is this judge's: the pooling below is the TurnNat paper's (III-B,
III-D). The likelihood it pools is not the paper's scorer: `judge_va.pt` is a 64-unit GRU over
voice activity alone (no audio), trained with TBU weight alpha = 1 (the paper's best, D4, is a
DualTurn audio model with alpha = 8). Hence the name `turnnat-va`; it was registered as
`turnnat-paper` before, a name still accepted (`naturalness.scorers.DEPRECATED_NAMES`).

For every frame t (50 Hz) the judge model gives a distribution over the 256 future two-speaker
activity classes (2 s horizon, `judge.targets`). TurnNat takes the negative log-likelihood of the
class that actually followed, pools it over turn-taking boundary units (TBUs: the 2 s before every
utterance onset and offset), and aggregates the unit scores:
    s(u)      = mean frame NLL inside unit u   (units with fewer than `min_unit_frames` scored
                frames are dropped; frames in the first `exclude_first_s` seconds and frames whose
                horizon runs past the end are not scored)
    MeanNLL   = mean of s(u) over units
    TailNLL   = mean of the worst ceil(tail_fraction * n) units
    DialogNLL = mean_weight * MeanNLL + (1 - mean_weight) * TailNLL
    m         = -DialogNLL                      (higher = more natural)

DialogNLL is a pooled likelihood (nats per frame), so a difference of two is a DeltaNLL proper.

Frame t (time t / 50 s, the convention of `judge.targets.tbu_frame_mask` used in training) belongs
to a unit when its time lies in [boundary - 2 s, boundary], ends included.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np

from judge.reports import checkpoint_path, predict_conversations, predict_recording
from judge.targets import FRAME_RATE, future_activity_classes, turn_boundary_units
from naturalness.score import NllScore, Score, UnscorableDialogue, refuse_cues, require_speech
from naturalness.turn_cue import TurnEndCue
from speech.recordings import load_recording
from storage.files import sha256_file
from turntaking.activity import Conversation

NAME = "turnnat-va"
# The name its results were cached under before the rename (analysis.study_sessions keys stored
# results by `identity()`): the score is unchanged, so those results stay valid and are reused.
STORED_NAME = "turnnat-paper"


@dataclass(frozen=True)
class NaturalnessParams:
    exclude_first_s: float = 3.0  # the model has too little context at the start
    min_unit_frames: int = 5  # a unit needs this many scored frames
    tail_fraction: float = 0.25  # TailNLL averages the worst ceil(fraction * n) units
    mean_weight: float = 0.5  # lambda: DialogNLL = lambda Mean + (1 - lambda) Tail
    min_utterance_s: float = 0.2  # shorter voice-activity regions make no TBUs
    unit_length_s: float = 2.0  # L: a TBU is [boundary - L, boundary]
    merge_gap_s: float = 0.0  # join a channel's regions closer than this before finding utterances

    def as_dict(self) -> dict:
        return asdict(self)


class NoUnitsError(UnscorableDialogue):
    """A dialogue without any scorable turn-taking boundary unit."""


@dataclass(frozen=True)
class DialogueScore(NllScore):
    mean_nll: float
    tail_nll: float
    dialog_nll: float
    n_units: int

    scorer: ClassVar[str] = NAME


def frame_nll(va_log_probs: np.ndarray, classes: np.ndarray) -> np.ndarray:
    """-log p(observed class) per frame; nan where the class is unknown (-1)."""
    n = min(len(va_log_probs), len(classes))
    classes = np.asarray(classes[:n])
    nll = np.full(n, np.nan)
    known = classes >= 0
    nll[known] = -np.asarray(va_log_probs[:n])[np.flatnonzero(known), classes[known]]
    return nll


def unit_frame_range(start: float, end: float, frame_rate: float) -> tuple[int, int]:
    """[first, last + 1) indices of the frames whose time t / frame_rate lies in [start, end]."""
    first = math.ceil(start * frame_rate - 1e-9)
    last = math.floor(end * frame_rate + 1e-9)
    return max(first, 0), last + 1


def unit_scores(nll: np.ndarray, units, frame_rate: float, params: NaturalnessParams = NaturalnessParams()) -> list[float]:
    """Mean frame NLL of every unit (start, end, ...) that has enough scored frames."""
    first_scored = math.ceil(params.exclude_first_s * frame_rate - 1e-9)
    scores = []
    for unit in units:
        a, b = unit_frame_range(unit[0], unit[1], frame_rate)
        a = max(a, first_scored)
        values = nll[a:b] if b > a else nll[:0]
        values = values[~np.isnan(values)]
        if values.size >= params.min_unit_frames:
            scores.append(float(values.mean()))
    return scores


def pool_units(scores, params: NaturalnessParams = NaturalnessParams()) -> DialogueScore:
    """MeanNLL, TailNLL and DialogNLL of a dialogue's unit scores."""
    s = np.sort(np.asarray(list(scores), dtype=float))[::-1]
    if s.size == 0:
        raise NoUnitsError("no turn-taking boundary unit with enough scored frames")
    k = math.ceil(params.tail_fraction * s.size)
    mean_nll = float(s.mean())
    tail_nll = float(s[:k].mean())
    dialog = params.mean_weight * mean_nll + (1 - params.mean_weight) * tail_nll
    return DialogueScore(mean_nll, tail_nll, dialog, int(s.size))


def score_conversation(conv: Conversation, model, params: NaturalnessParams = NaturalnessParams(),
                       predictions=None) -> DialogueScore:
    """TurnNat score of one conversation (one causal model pass unless `predictions` are given)."""
    from judge.model import predict

    require_speech(conv)
    if predictions is None:
        predictions = predict(model, conv)
    classes = future_activity_classes(conv.frames(FRAME_RATE))
    nll = frame_nll(predictions.va_log_probs, classes)
    units = turn_boundary_units(conv, min_utterance_s=params.min_utterance_s, length_s=params.unit_length_s,
                                merge_gap_s=params.merge_gap_s)
    try:
        return pool_units(unit_scores(nll, units, FRAME_RATE, params), params)
    except NoUnitsError as exc:
        name = conv.source or "dialogue"
        raise NoUnitsError(f"{name}: {exc} (too short, or no speech after the first {params.exclude_first_s:g} s)") from None


@dataclass(frozen=True)
class TurnNatVaScorer:
    """The `turnnat-va` scorer with its judge (naturalness.score.Scorer)."""

    judge: object  # judge.model.JudgeModel
    checkpoint: Path
    settings: NaturalnessParams = NaturalnessParams()

    name: ClassVar[str] = NAME
    units: ClassVar[str] = "nats/frame (DialogNLL)"
    takes_cues: ClassVar[bool] = False
    needs_judge: ClassVar[bool] = True

    @classmethod
    def load(cls, model_file=None) -> TurnNatVaScorer:
        from judge.model import load_checkpoint  # torch: only for this scorer

        path = checkpoint_path(model_file)
        return cls(load_checkpoint(path), path)

    @property
    def params(self) -> dict:
        return self.settings.as_dict()

    @property
    def reference(self) -> dict:
        return {}

    def identity(self) -> dict:
        return {"scorer": STORED_NAME, "checkpoint_sha256": sha256_file(self.checkpoint), "turnnat": self.params}

    def score(self, conversation: Conversation, cues: Sequence[TurnEndCue] | None = None) -> DialogueScore:
        refuse_cues(self.name, cues)
        return score_conversation(conversation, self.judge, self.settings)

    def score_recording(self, path) -> Score:
        """Words too where the judge is word-conditioned (faster-whisper on audio), audio where it needs audio."""
        conv, preds = predict_recording(self.judge, path, words=self.judge.needs_words)
        return score_conversation(conv, self.judge, self.settings, preds)

    def score_recordings(self, paths: Sequence[Path]) -> Iterator[Score]:
        """Voice-activity JSON files with a voice-activity judge are predicted as one batch (equal to
        one by one up to float rounding); audio, or a judge that needs it, file by file."""
        paths = [Path(p) for p in paths]
        if self.judge.needs_audio or any(p.suffix.lower() != ".json" for p in paths):
            yield from (self.score_recording(p) for p in paths)
            return
        convs = [load_recording(p, words=False) for p in paths]
        for conv, preds in zip(convs, predict_conversations(self.judge, convs)):
            yield score_conversation(conv, self.judge, self.settings, preds)

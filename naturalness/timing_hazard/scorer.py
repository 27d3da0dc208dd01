"""Dialogue naturalness as the likelihood of its timing under human conversation (scorer `timing-hazard`).

The default naturalness scorer. `naturalness.timing_hazard.hazards` gives every frame transition of both
speakers a log-likelihood under Switchboard timing, in context. With the cost of a frame

    cost(t) = NLL of frame t - flip_cost * (number of starts and stops at t)

a dialogue's score is

    MeanRate    = sum of cost(t) / duration                     (nats per second)
    r(w)        = sum of cost(t) over the window w of peak_window_s, / peak_window_s
    PeakRate    = tau * log(mean over all windows w of exp(r(w) / tau))   (a soft maximum)
    NLLRate     = MeanRate + peak_weight * PeakRate
    naturalness = -NLLRate                                      (higher = more natural)

The sum charges every frame, so a silence that lasts longer than people let it (a late or a
missing answer) costs for every frame it lasts, instead of being averaged away. `flip_cost`
charges each start or stop a flat price, so that a dialogue is not judged more natural merely for
having fewer events: the score is about *when* things happen given how much happens. The peak
term is the dialogue's least likely stretches: a failure of turn-taking is local (one late
answer in a minute of talk), and conversations differ in their overall level more than one
failure moves the mean, so the worst moments are what set a failed dialogue apart from natural
ones. The soft maximum, a mean over windows, does not grow with the number of windows (a hard
maximum would make long dialogues look worse) and moves smoothly with every frame. A dialogue
shorter than the window is its own window. flip_cost 3.5 nats, peak_window_s 6 s, peak_weight 2
and tau 0.5 nats/s were chosen on perturbation pairs of *training* conversations
(naturalness/checkpoints/MODEL_CARD.md).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np

from naturalness.score import NllScore, Score, UnscorableDialogue, require_speech, score_voice_activity
from naturalness.timing_hazard import NAME
from naturalness.timing_hazard.context import FRAME_RATE, ipu_frames
from naturalness.timing_hazard.hazards import TimingHazardModel
from naturalness.timing_hazard.model_file import load_timing_model, packaged_model_path, recorded_reference
from naturalness.turn_cue import TurnEndCue, cue_logit_shift
from storage.files import sha256_file
from turntaking.activity import Conversation
from turntaking.events import EventParams

# scipy.special is imported where it is used: most commands never need it.


@dataclass(frozen=True)
class TimingParams:
    flip_cost_nats: float = 3.5
    peak_window_s: float = 6.0
    peak_weight: float = 2.0
    peak_temperature: float = 0.5  # nats per second
    cue_weight: float = 1.0  # how far an audio turn-completion cue moves the hazards (naturalness.turn_cue)
    events: EventParams = EventParams()

    def as_dict(self) -> dict:
        return {**{k: v for k, v in asdict(self).items() if k != "events"}, "events": self.events.as_dict()}


@dataclass(frozen=True)
class TimingScore(NllScore):
    nll_rate: float  # mean_rate + peak_weight * peak_rate
    mean_rate: float  # nats per second over the dialogue, after the flip charge
    peak_rate: float  # soft maximum of the rate over its windows (nats per second)
    peak_start_s: float  # where its least likely window starts
    total_nll: float
    n_flips: int
    duration_s: float

    scorer: ClassVar[str] = NAME

    @property
    def dialog_nll(self) -> float:
        return self.nll_rate


def score_timing(conv: Conversation, model: TimingHazardModel, params: TimingParams = TimingParams(),
                 cues: Sequence[TurnEndCue] | None = None) -> TimingScore:
    """The dialogue's score; `cues` (naturalness.turn_cue, from its audio) inform the hazards after IPU ends."""
    va = ipu_frames(conv, params.events)
    if va.shape[1] < 2:
        raise UnscorableDialogue(f"{conv.source or 'dialogue'}: too short to score ({conv.duration:.2f} s)")
    shift = cue_logit_shift(list(cues), va, FRAME_RATE, params.cue_weight) if cues else None
    return score_frames(va, model, params, shift)


def score_frames(va: np.ndarray, model: TimingHazardModel, params: TimingParams = TimingParams(),
                 logit_shift: np.ndarray | None = None) -> TimingScore:
    """The score of (2, n) IPU-level activity frames (`ipu_frames`)."""
    ll, _ = model.frame_log_likelihood(va, logit_shift)
    return score_log_likelihoods(ll, (np.diff(va, axis=1) != 0).sum(axis=0), params)


def score_log_likelihoods(ll: np.ndarray, flips: np.ndarray, params: TimingParams = TimingParams()) -> TimingScore:
    """The score from every frame transition's log-likelihood and its number of starts and stops."""
    from scipy.special import logsumexp
    cost = -ll - params.flip_cost_nats * flips
    duration = len(ll) / FRAME_RATE
    window = max(1, min(len(cost), int(round(params.peak_window_s * FRAME_RATE))))
    running = np.concatenate([[0.0], np.cumsum(cost)])
    rates = (running[window:] - running[:-window]) / (window / FRAME_RATE)  # every window's, 1 frame apart
    # A soft maximum normalised by the number of windows: the worst stretches dominate, and a
    # longer dialogue of the same kind does not score worse merely for offering more windows.
    tau = params.peak_temperature
    peak_rate = float(tau * (logsumexp(rates / tau) - np.log(len(rates))))
    mean_rate = float(cost.sum()) / duration
    worst_start = int(np.argmax(rates))
    return TimingScore(mean_rate + params.peak_weight * peak_rate, mean_rate, peak_rate, worst_start / FRAME_RATE,
                       float(-ll.sum()), int(flips.sum()), duration)


@dataclass(frozen=True)
class TimingHazardScorer:
    """The `timing-hazard` scorer with its model (naturalness.score.Scorer)."""

    model: TimingHazardModel
    model_path: Path
    settings: TimingParams = TimingParams()

    name: ClassVar[str] = NAME
    units: ClassVar[str] = "nats/s (a cost: NLL plus 3.5 per start or stop, peak term)"
    takes_cues: ClassVar[bool] = True
    needs_judge: ClassVar[bool] = False

    @classmethod
    def load(cls, model_file=None) -> TimingHazardScorer:
        path = packaged_model_path() if model_file is None else Path(model_file)
        return cls(load_timing_model(path), path)

    @property
    def params(self) -> dict:
        return self.settings.as_dict()

    @property
    def reference(self) -> dict:
        return recorded_reference(self.model_path)

    def identity(self) -> dict:
        return {"scorer": self.name, "model_sha256": sha256_file(self.model_path), **self.params}

    def score(self, conversation: Conversation, cues: Sequence[TurnEndCue] | None = None) -> TimingScore:
        require_speech(conversation)
        return score_timing(conversation, self.model, self.settings, cues)

    def score_recording(self, path) -> Score:
        return score_voice_activity(self, path)

    def score_recordings(self, paths) -> Iterator[Score]:
        return (self.score_recording(p) for p in paths)

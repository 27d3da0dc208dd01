"""Dialogue naturalness as the likelihood of its timing under human conversation (scorer `timing-hazard`).

The default naturalness scorer. `judge.timing_hazard` gives every frame transition of both
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
(judge/checkpoints/TIMING_MODEL_CARD.md).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path

import numpy as np
from scipy.special import logsumexp

from turntaking.activity import Conversation
from turntaking.events import EventParams
from storage.files import sha256_file
from judge.timing_context import FRAME_RATE, ipu_frames
from judge.timing_hazard import HazardCounts, TimingHazardModel, TimingModelError
from judge.turn_cue import TurnEndCue, cue_logit_shift

SCORER_NAME = "timing-hazard"
MODEL_FILE = "timing_hazard.npz"


@dataclass(frozen=True)
class TimingParams:
    flip_cost_nats: float = 3.5
    peak_window_s: float = 6.0
    peak_weight: float = 2.0
    peak_temperature: float = 0.5  # nats per second
    cue_weight: float = 1.0  # how far an audio turn-completion cue moves the hazards (judge.turn_cue)
    events: EventParams = EventParams()

    def as_dict(self) -> dict:
        return {**{k: v for k, v in asdict(self).items() if k != "events"}, "events": self.events.as_dict()}


@dataclass(frozen=True)
class TimingScore:
    nll_rate: float  # mean_rate + peak_weight * peak_rate
    mean_rate: float  # nats per second over the dialogue, after the flip charge
    peak_rate: float  # soft maximum of the rate over its windows (nats per second)
    peak_start_s: float  # where its least likely window starts
    total_nll: float
    n_flips: int
    duration_s: float

    @property
    def dialog_nll(self) -> float:
        return self.nll_rate

    @property
    def naturalness(self) -> float:
        return -self.nll_rate

    def as_dict(self) -> dict:
        return {"scorer": SCORER_NAME, "dialog_nll": self.dialog_nll, "naturalness": self.naturalness,
                **asdict(self)}


def score_timing(conv: Conversation, model: TimingHazardModel, params: TimingParams = TimingParams(),
                 cues: list[TurnEndCue] | None = None) -> TimingScore:
    """The dialogue's score; `cues` (judge.turn_cue, from its audio) inform the hazards after IPU ends."""
    va = ipu_frames(conv, params.events)
    if va.shape[1] < 2:
        raise ValueError(f"{conv.source or 'dialogue'}: too short to score ({conv.duration:.2f} s)")
    shift = cue_logit_shift(cues, va, FRAME_RATE, params.cue_weight) if cues else None
    return score_frames(va, model, params, shift)


def score_frames(va: np.ndarray, model: TimingHazardModel, params: TimingParams = TimingParams(),
                 logit_shift: np.ndarray | None = None) -> TimingScore:
    """The score of (2, n) IPU-level activity frames (`ipu_frames`)."""
    ll, _ = model.frame_log_likelihood(va, logit_shift)
    flips = (np.diff(va, axis=1) != 0).sum(axis=0)
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


# -- the packaged model ------------------------------------------------------------------------


def packaged_model_path() -> Path:
    return Path(str(resources.files("judge").joinpath("checkpoints"))) / MODEL_FILE


def manifest_path(path: Path) -> Path:
    return path.with_suffix(".manifest.json")


def check_manifest_sha256(path: Path, error=ValueError) -> None:
    """Raise `error` when the file differs from the sha256 its manifest (PATH.manifest.json) records."""
    manifest = manifest_path(path)
    if not manifest.is_file():
        return
    want = json.loads(manifest.read_text()).get("sha256")
    got = sha256_file(path)
    if want and got != want:
        raise error(f"{path}: sha256 {got[:16]}... differs from its manifest's {want[:16]}... (file changed or corrupt)")


def load_timing_model(path=None) -> TimingHazardModel:
    """The timing model at `path` (default: the packaged one), its sha256 checked against its manifest."""
    path = packaged_model_path() if path is None else Path(path)
    if not path.is_file():
        raise TimingModelError(f"timing model not found: {path}")
    check_manifest_sha256(path, TimingModelError)
    return TimingHazardModel.load(path)


def fit_timing_model(conversations, events: EventParams = EventParams(), smoothing: float = 10.0,
                     meta: dict | None = None) -> TimingHazardModel:
    counts = HazardCounts.empty()
    n = 0
    for conv in conversations:
        counts.add(ipu_frames(conv, events))
        n += 1
    return TimingHazardModel.from_counts(counts, smoothing, {**(meta or {}), "conversations": n,
                                                             "events": events.as_dict()})


REFERENCE_LENGTHS_S = (30, 60, 90, 120, 180, 300)


def human_reference(conversations, model: TimingHazardModel, params: TimingParams = TimingParams(),
                    lengths_s=REFERENCE_LENGTHS_S) -> dict:
    """Naturalness of human-human conversation cut into windows of each length (from the start,
    not overlapping): {length: {"mean", "sd", "windows"}}, to set a dialogue of that length beside."""
    scores = {length: [] for length in lengths_s}
    for conv in conversations:
        va = ipu_frames(conv, params.events)
        for length in lengths_s:
            n = int(length * FRAME_RATE)
            for start in range(0, va.shape[1] - n + 1, n):
                scores[length].append(score_frames(va[:, start:start + n], model, params).naturalness)
    return {str(length): {"mean": float(np.mean(v)), "sd": float(np.std(v)), "windows": len(v)}
            for length, v in scores.items() if v}


def reference_for(reference: dict, duration_s: float) -> tuple[int, dict] | None:
    """The reference entry whose window length is nearest to `duration_s` (log scale)."""
    if not reference:
        return None
    length = min(reference, key=lambda k: abs(np.log(float(k)) - np.log(max(duration_s, 1.0))))
    return int(length), reference[length]


def save_timing_model(model: TimingHazardModel, path, extra: dict | None = None) -> dict:
    """Write the model and its manifest (sha256, what it was fitted on); return the manifest."""
    path = Path(path)
    digest = model.save(path)
    manifest = {"file": path.name, "sha256": digest, "scorer": SCORER_NAME, "frame_rate": FRAME_RATE,
                "smoothing": model.smoothing, "meta": model.meta, **(extra or {})}
    manifest_path(path).write_text(json.dumps(manifest, indent=1))
    return manifest

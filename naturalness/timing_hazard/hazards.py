"""A likelihood model of human turn-taking timing: per-frame hazards of starting and stopping.

Two-speaker voice activity is a pair of binary processes. At every frame (20 Hz) each speaker
keeps or flips its state, with a probability that depends on the turn-taking context of
`naturalness.timing_hazard.context` (both states, how long each has lasted, who spoke last, how long the other's
last utterance was). The model is that table of hazards,

    h(c) = P(flip at t + 1 | context c at t),

counted on human-human conversation (Switchboard) and smoothed towards coarser contexts where a
context is rare:

    h0 = P(flip | own, other, own_run)                         (add-half prior)
    h1 = P(flip | ... , other_run)          shrunk towards h0 with weight `smoothing`
    h2 = P(flip | ... , other_spoke_last, other_ipu)  shrunk towards h1

A dialogue's frames then have a log-likelihood under human timing. Why the TurnNat perturbations
cost likelihood under it is in `naturalness/checkpoints/MODEL_CARD.md`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from naturalness.timing_hazard.context import N_IPU_BINS, N_RUN_BINS, FrameContext, frame_context
from storage.files import sha256_file

LEVEL_SIZES = (2 * 2 * N_RUN_BINS, 2 * 2 * N_RUN_BINS * N_RUN_BINS,
               2 * 2 * N_RUN_BINS * N_RUN_BINS * 2 * N_IPU_BINS)


class TimingModelError(ValueError):
    """A timing model file that is missing, corrupt or of another format."""


def context_cells(ctx: FrameContext) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Cell index of every frame's context at the three levels (coarse to fine)."""
    c0 = (ctx.own * 2 + ctx.other) * N_RUN_BINS + ctx.own_run
    c1 = c0 * N_RUN_BINS + ctx.other_run
    c2 = (c1 * 2 + ctx.other_spoke_last) * N_IPU_BINS + ctx.other_ipu
    return c0, c1, c2


@dataclass(frozen=True)
class HazardCounts:
    """Flips and frames seen in every context cell, at each level."""

    flips: tuple[np.ndarray, np.ndarray, np.ndarray]
    totals: tuple[np.ndarray, np.ndarray, np.ndarray]

    @classmethod
    def empty(cls) -> "HazardCounts":
        return cls(tuple(np.zeros(n, np.int64) for n in LEVEL_SIZES), tuple(np.zeros(n, np.int64) for n in LEVEL_SIZES))

    def add(self, va: np.ndarray) -> None:
        ctx = frame_context(va)
        flips = ctx.flips.ravel()
        for level, cells in enumerate(context_cells(ctx)):
            cells = cells.ravel()
            self.flips[level][:] += np.bincount(cells, weights=flips, minlength=LEVEL_SIZES[level]).astype(np.int64)
            self.totals[level][:] += np.bincount(cells, minlength=LEVEL_SIZES[level])


@dataclass(frozen=True)
class TimingHazardModel:
    """Smoothed hazards of the finest context level, plus what they were counted on."""

    hazard: np.ndarray  # (LEVEL_SIZES[2],) P(flip | cell)
    counts: HazardCounts
    smoothing: float
    meta: dict

    @classmethod
    def from_counts(cls, counts: HazardCounts, smoothing: float = 10.0, meta: dict | None = None) -> "TimingHazardModel":
        f0, f1, f2 = (f.astype(float) for f in counts.flips)
        n0, n1, n2 = (n.astype(float) for n in counts.totals)
        h0 = (f0 + 0.5) / (n0 + 1.0)
        parent1 = np.repeat(h0, N_RUN_BINS)
        h1 = (f1 + smoothing * parent1) / (n1 + smoothing)
        parent2 = np.repeat(h1, 2 * N_IPU_BINS)
        h2 = (f2 + smoothing * parent2) / (n2 + smoothing)
        return cls(np.clip(h2, 1e-6, 1 - 1e-6), counts, smoothing, dict(meta or {}))

    def frame_log_likelihood(self, va: np.ndarray, logit_shift: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(log-likelihood, expected log-likelihood) of every frame transition, both speakers summed.

        The expectation is under the model itself (minus the entropy of each Bernoulli), so their
        difference has mean zero on conversations that follow human timing, whatever their length.
        `logit_shift` (2, n - 1): evidence from outside the voice activity (an audio cue) added to
        each hazard on the log-odds scale."""
        return transition_log_likelihood(*self.frame_hazards(va, logit_shift))

    def frame_hazards(self, va: np.ndarray, logit_shift: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(flips, hazards), both (2, n - 1): whether each speaker flipped at every frame transition,
        and the model's P(flip) there (`logit_shift` added on the log-odds scale)."""
        ctx = frame_context(va)
        h = self.hazard[context_cells(ctx)[2]]
        if logit_shift is not None:
            h = np.clip(1.0 / (1.0 + np.exp(-(np.log(h / (1 - h)) + logit_shift))), 1e-6, 1 - 1e-6)
        return ctx.flips, h

    # -- files -------------------------------------------------------------------------------

    def save(self, path) -> str:
        """Write the counts (.npz) and return the file's sha256; the hazards are derived at load."""
        path = Path(path)
        arrays = {f"flips{i}": f for i, f in enumerate(self.counts.flips)}
        arrays.update({f"totals{i}": n for i, n in enumerate(self.counts.totals)})
        with path.open("wb") as fh:
            np.savez_compressed(fh, **arrays, meta=np.array(json.dumps({**self.meta, "smoothing": self.smoothing})))
        return sha256_file(path)

    @classmethod
    def load(cls, path) -> "TimingHazardModel":
        path = Path(path)
        if not path.is_file():
            raise TimingModelError(f"timing model not found: {path}")
        try:
            with np.load(path, allow_pickle=False) as data:
                flips = tuple(data[f"flips{i}"] for i in range(3))
                totals = tuple(data[f"totals{i}"] for i in range(3))
                meta = json.loads(str(data["meta"]))
        except (OSError, ValueError, KeyError) as exc:
            raise TimingModelError(f"{path}: not a timing model file ({exc})") from None
        if tuple(len(f) for f in flips) != LEVEL_SIZES or tuple(len(n) for n in totals) != LEVEL_SIZES:
            raise TimingModelError(f"{path}: context table sizes differ from this code's")
        smoothing = float(meta.pop("smoothing", 10.0))
        return cls.from_counts(HazardCounts(flips, totals), smoothing, meta)


def transition_log_likelihood(flips: np.ndarray, h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(log-likelihood, expected log-likelihood) of every frame transition, both speakers summed,
    from the (2, n - 1) flips and hazards (`TimingHazardModel.frame_hazards`)."""
    ll = np.where(flips == 1, np.log(h), np.log1p(-h))
    expected = h * np.log(h) + (1 - h) * np.log1p(-h)
    return ll.sum(axis=0), expected.sum(axis=0)

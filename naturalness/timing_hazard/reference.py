"""Human-human naturalness by window length: conversations of a corpus cut into windows of each
length and scored, recorded in the model's manifest when it is fitted, to set a dialogue of that
length beside (the study views' Switchboard row; `Scorer.reference`). `human_reference` scores
voice activity (timing-hazard, in the timing model's manifest); `human_reference_with_words` scores
the windows with their words (timing-hazard-words, in the first-words table's manifest), so that a
dialogue scored with words sits beside conversations scored the same way."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from annotation.edits import crop
from naturalness.timing_hazard.context import FRAME_RATE, ipu_frames
from naturalness.timing_hazard.hazards import TimingHazardModel
from naturalness.timing_hazard.scorer import TimingParams, score_frames
from turntaking.activity import Conversation
from turntaking.intervals import ratio_of_sums_interval

REFERENCE_LENGTHS_S = (30, 60, 90, 120, 180, 300)


def human_reference(conversations, model: TimingHazardModel, params: TimingParams = TimingParams(),
                    lengths_s=REFERENCE_LENGTHS_S) -> dict:
    """Naturalness of human-human conversation cut into windows of each length (from the start,
    not overlapping): {length: {"mean", "sd", "windows"}}, to set a dialogue of that length beside."""
    scores = {length: [] for length in lengths_s}
    for i, conv in enumerate(conversations):
        va = ipu_frames(conv, params.events)
        for length in lengths_s:
            n = int(length * FRAME_RATE)
            for start in range(0, va.shape[1] - n + 1, n):
                scores[length].append((i, score_frames(va[:, start:start + n], model, params).naturalness))
    return _summary(scores)


def human_reference_with_words(conversations, naturalness: Callable[[Conversation], float],
                               lengths_s=REFERENCE_LENGTHS_S) -> dict:
    """`human_reference` with each window cut out of the conversation with its words
    (`annotation.edits.crop`) and scored by `naturalness`."""
    scores = {length: [] for length in lengths_s}
    for i, conv in enumerate(conversations):
        for length in lengths_s:
            for start in np.arange(0.0, conv.duration - length + 1e-9, float(length)):
                scores[length].append((i, naturalness(crop(conv, float(start), float(start) + length))))
    return _summary(scores)


def _summary(scores: dict) -> dict:
    """Per length: mean, sd and number of the windows, and the mean's 95 % interval by a bootstrap
    over conversations (`ci95`; windows of one conversation are not independent draws)."""
    out = {}
    for length, pairs in scores.items():
        if not pairs:
            continue
        conv, value = np.array([c for c, _ in pairs]), np.array([v for _, v in pairs])
        _, which = np.unique(conv, return_inverse=True)
        ci = ratio_of_sums_interval(np.bincount(which, weights=value), np.bincount(which))
        out[str(length)] = {"mean": float(value.mean()), "sd": float(value.std()), "windows": len(value),
                            "conversations": int(which.max()) + 1, "ci95": None if ci is None else [ci[0], ci[1]]}
    return out

"""The contract every naturalness scorer keeps: a `Scorer` turns a dialogue into a `Score`.

    scorer = load_scorer("timing-hazard")            # naturalness.scorers: by name
    score = scorer.score(conversation)               # or scorer.score_recording(path)
    score.scorer, score.dialog_nll, score.naturalness, score.as_dict()

`dialog_nll` is higher for a less natural dialogue and `naturalness` = -dialog_nll, in the scorer's
`units`: the scales differ (nats per second, per event, per frame), so dialogues are compared
within one scorer, never across scorers. Every score names its scorer, in `as_dict()` too.
A scorer's attributes say what callers would otherwise ask its name: its `units`, whether it
`takes_cues` (Smart Turn audio cues, `naturalness.turn_cue`), whether it `needs_judge` (its model
is a judge checkpoint, `judge.model`, rather than a packaged file of its own), its `params`, its
human `reference` (naturalness of human-human conversation by window length) and its `identity`
(what its scores depend on).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import ClassVar, Protocol

import numpy as np

from naturalness.turn_cue import TurnEndCue
from speech.recordings import load_recording
from turntaking.activity import MIN_SPEECH_S, Conversation


class UnscorableDialogue(ValueError):
    """A dialogue a scorer cannot score (too short, nothing to score); the message says why."""


def require_speech(conv: Conversation) -> None:
    """Refuse a dialogue in which nobody speaks: a silent call is a finding about the call, not a
    dialogue, and every scorer would otherwise rate its calm as natural (timing-hazard: -1.42 for
    20 s of silence, above Switchboard's windows). A dialogue with one silent side is scored: a
    window of human conversation can hold one speaker's monologue (a study's calls without an
    answer are left out before scoring, by studies.call_quality)."""
    if sum(conv.speech_seconds()) < MIN_SPEECH_S:
        raise UnscorableDialogue(f"{conv.source or 'dialogue'}: no speech on either side (under {MIN_SPEECH_S:g} s in "
                                 f"{conv.duration:.1f} s): not a dialogue to score")


class Score(Protocol):
    """A dialogue's naturalness by one scorer."""

    @property
    def scorer(self) -> str: ...

    @property
    def dialog_nll(self) -> float: ...

    @property
    def naturalness(self) -> float: ...

    def as_dict(self) -> dict: ...


class NllScore:
    """What the score dataclasses share (they subclass it): naturalness = -dialog_nll, and
    `as_dict` with the scorer's name, dialog_nll and naturalness first, then their own fields."""

    scorer: ClassVar[str]

    @property
    def naturalness(self) -> float:
        return -self.dialog_nll

    def as_dict(self) -> dict:
        return {"scorer": self.scorer, "dialog_nll": self.dialog_nll, "naturalness": self.naturalness, **asdict(self)}


class Scorer(Protocol):
    """A naturalness scorer, loaded with its model (`naturalness.scorers.load_scorer`)."""

    name: ClassVar[str]
    units: ClassVar[str]
    takes_cues: ClassVar[bool]
    needs_judge: ClassVar[bool]

    @classmethod
    def load(cls, model_file=None) -> Scorer:
        """The scorer with its packaged model, or the one in `model_file` (a judge checkpoint
        where `needs_judge`)."""
        ...

    @property
    def model_file(self) -> str:
        """"packaged", or the model file given."""
        ...

    @property
    def params(self) -> dict: ...

    @property
    def reference(self) -> dict:
        """{window length s: {"mean", "sd", "windows"}} of human-human naturalness; {} without one."""
        ...

    def identity(self) -> dict:
        """What its scores depend on: its name, its model's sha256 and its parameters."""
        ...

    def score(self, conversation: Conversation, cues: Sequence[TurnEndCue] | None = None) -> Score: ...

    def score_recording(self, path: Path) -> Score:
        """The score of a two-channel recording or voice-activity JSON, read as the scorer needs."""
        ...

    def score_recordings(self, paths: Sequence[Path]) -> Iterator[Score]:
        """The scores of several recordings, in order (batched where the scorer can)."""
        ...


def refuse_cues(scorer: str, cues) -> None:
    """A scorer that takes no audio cue refuses `cues` (the cues, or whether any are asked for)."""
    if cues:
        raise ValueError(f"--audio-cue: the {scorer} scorer takes no audio cue (timing-hazard does)")


def score_voice_activity(scorer: Scorer, path) -> Score:
    """The score of a recording's voice activity alone (Silero on audio; a JSON as it is)."""
    return scorer.score(load_recording(path, words=False))


def dialogue_reference(scorer: Scorer, with_words: bool) -> dict:
    """The scorer's human reference for dialogues scored with words or without: a scorer that reads
    words keeps a second one, scored on voice activity alone (`reference_without_words`), since
    words that fit their roles make a dialogue score higher."""
    return scorer.reference if with_words else getattr(scorer, "reference_without_words", scorer.reference)


def reference_for(reference: dict, duration_s: float) -> tuple[int, dict] | None:
    """The entry of a scorer's `reference` whose window length is nearest to `duration_s` (log scale)."""
    if not reference:
        return None
    length = min(reference, key=lambda k: abs(np.log(float(k)) - np.log(max(duration_s, 1.0))))
    return int(length), reference[length]

"""What the predictive system does when the caller speaks while it holds the floor: pause, then
resume or yield. A state machine of its own, fed one 20 ms block at a time; the system carries
out what it decides (`Resume`, `Yield`) and hears the overlap's words for it (`hear`).

An overlap episode runs from the caller's first active frame to `overlap_end_ms` of their
silence. Once it holds `overlap_pause_ms` of speech as loud as the caller's voice the reply
pauses. An episode is decided by its words when it ends: none (a cough, a noise) or a
backchannel ("yeah", "uh-huh", the project's backchannel list) and the reply resumes; other
words ("hold on") and it yields, unless the whole overlap, judged again, was quieter than
the caller's voice ("Honey," said to someone else, its first syllable loud). A long one is
heard at `overlap_yield_ms` too: a backchannel so far is talked over (`talk_over_backchannels`),
a quieter voice on more of it is another's, and other words wait for its end (a part of a
backchannel may be misheard); at `overlap_yield_max_ms` it yields.

    listening --caller speech--> in an episode --overlap_pause_ms, as loud--> paused
    paused --its end, no words or a backchannel--> resumed (the episode over)
    paused --its end with other words, or overlap_yield_max_ms--> yielded (a new caller turn)
    paused --a backchannel at overlap_yield_ms--> talked over --overlap_yield_max_ms--> yielded
    short, its words not yet heard --> resumed at once (tentatively) --other words--> yielded
    quieter than the caller's voice --> a background voice, not listened to
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import Callable

import numpy as np

from judge.words import normalize_word
from systems.base import BLOCK, SAMPLE_RATE
from systems.events import EventKind
from turntaking.activity import Word
from turntaking.backchannel_words import is_backchannel_phrase, load_backchannel_list
from turntaking.events import EventParams

BACKGROUND_GAP_S = 0.7  # overlap this soon after a background voice's is that voice again (its own pauses)


# Hesitations alone do not take the floor (not in the backchannel list, which is for listeners' words).
FILLERS = ("uh", "um", "er", "ah", "eh")


def mean_db(levels) -> float:
    """The level of speech frames together (their mean power), in dB: loud syllables count as they sound."""
    return 10 * math.log10(float(np.mean(np.power(10.0, np.asarray(levels) / 10))) + 1e-12)


def not_taking_the_floor(text: str) -> bool:
    """Whether words heard over the system's speech leave it the floor: none (a cough, a noise),
    hesitations, or a backchannel (the project's list, as the corpus statistics use it). A word
    said again at once counts once: "yeah yeah yeah" is one backchannel, and Whisper loops on a
    short one ("Yeah. Yeah. Yeah. ...")."""
    said = [normalize_word(w) for w in text.split()]
    words = [Word(0.0, 0.0, w) for i, w in enumerate(said)
             if w not in ("", *FILLERS) and (i == 0 or w != said[i - 1])]
    return not words or is_backchannel_phrase(words, load_backchannel_list(), EventParams().backchannel_max_words)


@dataclass(frozen=True)
class Resume:
    """Go on with the paused reply: the overlap ended, or (`over`) it is a backchannel still being
    said, which the reply talks over."""

    words: str | None
    overlap: int  # samples of the caller's speech in the overlap
    over: bool = False


@dataclass(frozen=True)
class Yield:
    """Stop the reply: the overlap is a new turn of the caller's, begun at sample `start`."""

    why: str  # "words" or "long"
    words: str | None
    start: int
    speech: int  # samples of the caller's speech in it
    quiet: int  # samples of silence since its last speech


class OverlapPolicy:
    """One call's overlap episodes. `caller_levels`: dB of the caller's recent speech in the clear
    (the system appends to it); `hear(key, start)`: recognise the caller's audio from sample
    `start` to now into `words[key]`, in the background; `emit`: the system's event log."""

    def __init__(self, settings, caller_levels: deque, hear: Callable[[tuple, int], None],
                 emit: Callable[..., None]):
        self.settings = settings
        self.caller_levels = caller_levels
        self.hear = hear
        self.emit = emit
        self.paused = False
        self.episode = 0
        self.episode_start: int | None = None
        self.episode_levels: list[float] = []
        self.overlap = self.overlap_quiet = 0
        self.background = False
        self.background_end = -SAMPLE_RATE * 60  # when the last overlap heard as a background voice ended
        # what the recogniser heard of each overlap key sent to it (None until it answers; in any order)
        self.words: dict = {}
        self.heard_early = -1  # the episode heard at `overlap_yield_ms` and left to its end (or its length)
        self.talked_over = -1  # the episode heard as a backchannel at `overlap_yield_ms`: the reply goes on over it
        # (key, start, overlap, levels, end) of a short overlap resumed before its words were heard
        self.tentative = None
        self._now = 0

    def step(self, active: bool, level: float, now: int) -> Resume | Yield | None:
        """The caller's 20 ms block ending at sample `now` (`active`: their speech; `level`: dB)."""
        self._now = now
        decided = self._tentative_heard()
        if decided is not None:
            return decided
        if active:
            if self.episode_start is None:
                self.episode_start = now - BLOCK
                self.episode += 1
            self.overlap += BLOCK
            self.overlap_quiet = 0
            self.episode_levels.append(level)
        elif self.episode_start is not None:
            self.overlap_quiet += BLOCK
        if not self.paused:
            return self._playing()
        return self._while_paused(active)

    def _ms(self, ms: float) -> float:
        return ms * SAMPLE_RATE / 1000

    def _tentative_heard(self) -> Yield | None:
        """The words of a short overlap the reply resumed over, once heard: "hold on" yields now."""
        if self.tentative is None or self.words.get(self.tentative[0]) is None:
            return None
        key, start, overlap, levels, ended = self.tentative
        self.tentative = None
        text = self.words[key]
        if not_taking_the_floor(text):
            return None
        if not self.theirs(levels):  # "Honey," said aside, its first syllable loud
            self._background_voice(levels, ended)
            return None
        self.episode_start, self.overlap = start, max(self.overlap, overlap)  # the reply resumed too soon
        return self._yield("words", text)

    def _playing(self) -> Resume | Yield | None:
        """The reply plays (or is talked over): pause it once the overlap is long and loud enough."""
        s = self.settings
        if self.overlap_quiet >= self._ms(s.overlap_end_ms):
            self.end_episode()
        elif self.talked_over == self.episode:
            if self.overlap >= self._ms(s.overlap_yield_max_ms):  # longer than listeners' backchannels
                self._pause()
                return self._yield_unless_background("long")
        elif self.overlap >= self._ms(s.overlap_pause_ms) and not self.background:
            if self._now - self.background_end < BACKGROUND_GAP_S * SAMPLE_RATE:
                self.background = True  # the background voice again, after a pause of its own
            elif self.theirs():
                self._pause()
            else:
                self._background_voice()
        return None

    def _while_paused(self, active: bool) -> Resume | Yield | None:
        s = self.settings
        if self.overlap >= self._ms(s.overlap_yield_max_ms):
            return self._yield_unless_background("long")
        if self.overlap >= self._ms(s.overlap_yield_ms) and self.heard_early != self.episode:
            key = (self.episode, "long")  # its words so far
            self._hear(key)
            words = self.words.get(key)
            if words is None:
                return None
            if s.talk_over_backchannels and not_taking_the_floor(words):
                return self._resume(words, over=True)  # "mm-hmm" said slowly: the reply goes on over the rest
            if not self.theirs():
                return self._resume_for_background()
            # Other words so far do not yield yet: a part of a backchannel may be misheard (0.48 s of an
            # espeak-ng "mm-hmm" of 0.53 s was "And then for...", and the system answered "and anthem"),
            # so all its words decide at its end, and its length at `overlap_yield_max_ms` (the reply
            # stays paused meanwhile, silent as if it had yielded).
            self.heard_early = self.episode
        if active:
            return None
        return self._ended()

    def _ended(self) -> Resume | Yield | None:
        """A quiet frame of a paused episode: hear it as it is now; decide at `overlap_end_ms`."""
        s = self.settings
        key = (self.episode, self.overlap)  # the episode as it is now: heard from its first quiet frame
        self._hear(key)
        if self.overlap_quiet < self._ms(s.overlap_end_ms):
            return None
        words = self.words.get(key)
        if words is not None:
            if not_taking_the_floor(words):
                return self._resume(words)
            return self._yield_unless_background("words", words)
        if self.overlap <= self._ms(s.overlap_short_ms):
            # as short as most backchannels: go on at once, and yield if its words say otherwise
            self.tentative = (key, self.episode_start, self.overlap, list(self.episode_levels), self._now)
            return self._resume(None)
        return None

    def _pause(self) -> None:
        self.paused = True
        self.emit(EventKind.PAUSED)

    def _resume(self, words: str | None, over: bool = False) -> Resume:
        self.paused = False
        decided = Resume(words, self.overlap, over)
        if over:
            self.talked_over = self.episode
        else:
            self.end_episode()
        return decided

    def _yield(self, why: str, words: str | None = None) -> Yield:
        decided = Yield(why, words, self.episode_start, self.overlap, self.overlap_quiet)
        self.paused = False
        self.end_episode()
        return decided

    def _yield_unless_background(self, why: str, words: str | None = None) -> Resume | Yield:
        """The paused reply's overlap calls for yielding (its length or its words): judged again on
        all of it, a quieter voice whose first syllable was loud is another's, and the reply resumes."""
        if not self.theirs():
            return self._resume_for_background()
        return self._yield(why, words)

    def _resume_for_background(self) -> Resume:
        self._background_voice()
        return self._resume(None)

    def _background_voice(self, ended: list[float] | None = None, ended_at: int | None = None) -> None:
        """The overlapping voice is quieter than the caller's: not talking to us (nor its next words).
        The episode under way, or one that has `ended` (its levels) at sample `ended_at`: then only
        what follows within BACKGROUND_GAP_S of that end is that voice again, not whatever overlaps
        next (its words may be heard late, under load: the window does not start then)."""
        if ended is None:
            self.background = True
        else:
            self.background_end = ended_at
        self.emit(EventKind.BACKGROUND_VOICE,
                  level_db=round(mean_db(self.episode_levels if ended is None else ended), 1),
                  caller_db=round(mean_db(self.caller_levels), 1))

    def theirs(self, levels: list[float] | None = None) -> bool:
        """Whether the overlapping voice (`levels`: the episode's so far) is as loud as the caller's
        own (within `background_db`)."""
        levels = self.episode_levels if levels is None else levels
        if not self.caller_levels or not levels:
            return True
        return mean_db(levels) >= mean_db(self.caller_levels) - self.settings.background_db

    def _hear(self, key) -> None:
        """Have the episode so far recognised, once for each `key`."""
        if key in self.words:
            return
        # the keys of this episode and the one before (whose words may still be awaited), pruned in
        # place: the recognisers' threads write to it
        for old in [k for k in list(self.words) if k[0] < self.episode - 1]:
            self.words.pop(old, None)
        self.words[key] = None
        self.hear(key, self.episode_start)

    def end_episode(self) -> None:
        if self.background:
            self.background_end = self._now
        self.episode_start = None
        self.episode_levels = []
        self.overlap = self.overlap_quiet = 0
        self.background = False

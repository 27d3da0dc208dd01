"""Streaming recognition: the caller's words while they speak, so that when their speech ends only
the words not yet agreed are decoded.

Every `every_s` of new audio the recogniser hears the turn from the end of its last agreed word on,
the agreed words as its prompt. A word is agreed once two consecutive hypotheses begin with it
(LocalAgreement-2, as in whisper-streaming, Machacek et al. 2023), never the latest hypothesis's
last word (its audio may be cut: "plan" of "planning"). Where the agreed words end, by Whisper's
cross-attention alignment, the next hypothesis starts: what is decoded shrinks to the tail.

    stream = StreamingRecognition(recogniser, every_s=0.3, emit=emit)
    stream.start()
    stream.follow(blocks)            # the turn's audio blocks, appended by the caller's thread
    stream.grew()                    # after each append
    tail = stream.tail()             # at the end of speech: Tail(agreed words, the sample they end at)
    recogniser.transcribe(audio[tail.start:], previous_text=tail.agreed)

The cost is bounded per process: partials of all calls share `PARTIAL_SLOTS` (one per two cores);
a partial that finds none skips its round, so a loaded machine decodes a longer tail at the end,
as without streaming. The recogniser keeps a replica for the turn's final words
(systems.recognition): they never wait on a partial.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from speech.asr import clean_word
from speech.cpus import usable_cpus
from systems.base import SAMPLE_RATE
from systems.events import EventKind
from systems.stages import TimedRecogniser

# Partials decoding at once in this process, all calls together: one per two cores.
PARTIAL_SLOTS = threading.BoundedSemaphore(max(1, usable_cpus() // 2))
MIN_AUDIO_S = 0.5  # a hypothesis needs this much audio past the agreed words (less is a word or two at most)


def agreed_words(previous: Sequence[str], latest: Sequence[str]) -> int:
    """How many of `latest`'s words are agreed: those it begins with as `previous` does (compared
    without case or punctuation), its last word never.

    >>> agreed_words(["Can", "you", "help"], ["can", "you", "help", "me"])
    3
    >>> agreed_words(["Can", "you"], ["Can", "you"])
    1
    """
    n = 0
    for a, b in zip(previous, latest):
        if not clean_word(a) or clean_word(a) != clean_word(b):
            break
        n += 1
    return max(0, min(n, len(latest) - 1))


def without_repeated_word(agreed: str, heard: str) -> str:
    """`heard` without a first word that repeats the agreed words' last: a cut at a word's end
    that the alignment placed early hears the word's end again ("party" + "party next week")."""
    last, words = agreed.split()[-1:], heard.split()
    if last and words and clean_word(last[0]) and clean_word(words[0]) == clean_word(last[0]):
        return " ".join(words[1:])
    return heard


@dataclass(frozen=True)
class Tail:
    """Where the turn's audio stops being agreed: `agreed` are the words of its first `start` samples."""

    agreed: str = ""
    start: int = 0


class StreamingRecognition:
    """The agreed words of one caller turn at a time, heard on a thread of its own."""

    def __init__(self, recogniser: TimedRecogniser, every_s: float = 0.3,
                 emit: Callable[..., None] = lambda kind, **fields: None):
        self.recogniser = recogniser
        self.every = int(every_s * SAMPLE_RATE)
        self.emit = emit
        self._wake = threading.Condition()
        self._closed = False
        self._follow(None, 0)
        self._thread = threading.Thread(target=self._run, name="streaming-asr", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def follow(self, blocks: list[np.ndarray] | None, first_block: int = 0) -> None:
        """Hear the turn whose audio is `blocks[first_block:]` (None: no turn); nothing agreed yet."""
        with self._wake:
            self._follow(blocks, first_block)
            self._wake.notify()

    def _follow(self, blocks, first_block: int) -> None:
        self._blocks, self._first = blocks, first_block
        self._turn = getattr(self, "_turn", 0) + 1  # a hypothesis of an earlier turn is dropped
        self._agreed: list[str] = []
        self._start = 0  # the sample of the turn's audio where the agreed words end
        self._previous: list[str] = []  # the last hypothesis of the audio from _start on
        self._heard = 0  # samples of the turn's audio the last hypothesis heard

    def grew(self) -> None:
        """The turn's audio has grown (the caller's thread, every block): a partial may be due."""
        with self._wake:
            if self._blocks is not None and self._samples() - self._heard >= self.every:
                self._wake.notify()

    def tail(self, first_block: int = 0) -> Tail:
        """The agreed words and where they end; the turn followed from `first_block` on, else from
        there now (nothing agreed)."""
        with self._wake:
            if self._blocks is not None and first_block != self._first:
                self._follow(self._blocks, first_block)
            return Tail(" ".join(self._agreed), self._start)

    def close(self) -> None:
        with self._wake:
            self._closed = True
            self._wake.notify()

    def _samples(self) -> int:
        return sum(len(b) for b in self._blocks[self._first:]) if self._blocks is not None else 0

    def _run(self) -> None:
        while True:
            with self._wake:
                self._wake.wait_for(lambda: self._closed or (
                    self._blocks is not None and self._samples() - self._heard >= self.every))
                if self._closed:
                    return
                turn, start, agreed = self._turn, self._start, " ".join(self._agreed)
                audio = np.concatenate(self._blocks[self._first:])
                self._heard = len(audio)
            if len(audio) - start < MIN_AUDIO_S * SAMPLE_RATE or not PARTIAL_SLOTS.acquire(blocking=False):
                continue  # too little new audio yet, or the machine's partials are all busy: next round
            try:
                began = time.monotonic()
                words = self.recogniser.timed_words(audio[start:], agreed or None)
                asr_s = time.monotonic() - began
            except Exception as e:  # without partials the turn's end decodes it all, as before streaming
                self.emit(EventKind.ERROR, message=f"streaming recognition: {type(e).__name__}: {e}")
                continue
            finally:
                PARTIAL_SLOTS.release()
            self._hypothesis(turn, start, words, asr_s, len(audio))

    def _hypothesis(self, turn: int, start: int, words: list[tuple[float, float, str]], asr_s: float,
                    heard: int) -> None:
        """Agree the words two hypotheses share, and move the tail's start past them."""
        texts = [w[2].strip() for w in words]
        with self._wake:
            if turn != self._turn or start != self._start:
                return  # a new turn, or the agreed words moved meanwhile
            n = agreed_words(self._previous, texts)
            if n:
                # between the last agreed word's end and the next word's start
                cut = (words[n - 1][1] + words[n][0]) / 2
                self._agreed += texts[:n]
                self._start = start + min(int(cut * SAMPLE_RATE), heard - start)
            self._previous = texts[n:]
            agreed, text = " ".join(self._agreed), " ".join(self._agreed + self._previous)
        self.emit(EventKind.PARTIAL, text=text, agreed=agreed, asr_s=round(asr_s, 3), audio_s=round(heard / SAMPLE_RATE, 2))

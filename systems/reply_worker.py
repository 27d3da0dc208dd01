"""The reply stage every embedded system shares: recognise a turn, generate the reply, speak it,
on a thread of its own; the audio of the turn being prepared is held until the system releases it.

A system decides *when* (the cascade's endpointer, the predictive system's policy); this decides
*what*, and may be ahead of the decision: a turn is prepared speculatively (`prepare`), dropped if
the caller goes on (`drop_turn`), and played once the system takes the turn (`release`).

Streaming: the LLM's text goes to the voice sentence by sentence, the first chunk as soon as it is
a clause or a short phrase (`ends_chunk`, `breaks_before`), so speech starts while the LLM still writes.
"""

from __future__ import annotations

import queue
import re
import threading
import time
from dataclasses import asdict, dataclass
from typing import Callable

import numpy as np

from systems.base import BLOCK, SAMPLE_RATE, AudioQueue, SystemError_
from systems.events import EventKind
from systems.stages import CascadeStages

# Clause ends after which text is spoken: sentence ends, and for the first chunk a comma too.
SENTENCE_END = re.compile(r"[.!?]+[\"')\]]?\s*$")
_CLAUSE_END = re.compile(r"[,;:]\s*$")
# Words that usually open a new phrase: the first chunk may end before one of them.
PHRASE_STARTS = frozenset(
    "and but so because or if when while which that who where to can could will would should is are was "
    "were has have depending for with in on at from by about like as".split()
)


def trim_leading_silence(audio: np.ndarray, threshold: float = 0.01, keep_s: float = 0.005) -> np.ndarray:
    """`audio` from `keep_s` before its first sample louder than `threshold`."""
    loud = np.flatnonzero(np.abs(audio) > threshold)
    if not len(loud):
        return audio
    return audio[max(0, int(loud[0]) - int(keep_s * SAMPLE_RATE)):]


def ends_chunk(chunk: str, first: bool) -> bool:
    """A sentence is spoken as soon as it ends; the reply's first chunk at a clause end too."""
    if SENTENCE_END.search(chunk):
        return True
    return first and bool(_CLAUSE_END.search(chunk)) and bool(chunk.strip(" ,;:"))


def breaks_before(chunk: str, next_piece: str, min_words: int, max_words: int) -> bool:
    """Whether the reply's first chunk should be spoken before `next_piece` begins a new word:
    once it has `min_words` words and the next word usually opens a phrase ("can", "with",
    "because"...), or at `max_words` words. The participant is waiting for this chunk, and a
    long first sentence would keep them waiting ~25 ms a token (min_words 0: never break)."""
    if min_words <= 0 or not next_piece[:1].isspace() or not next_piece.strip():
        return False
    n_words = len(chunk.split())
    return n_words >= max_words or (n_words >= min_words and next_piece.strip().lower() in PHRASE_STARTS)


@dataclass
class ReplyJob:
    turn: int
    audio: np.ndarray | None  # None: warm the LLM up
    heard_before: str = ""  # the turn's words before `audio`, already recognised


class ReplyWorker:
    """Turns in, reply audio out (`out`), for one call.

    `settings` are a cascade's (systems.cascaded.CascadedSettings: the prompt, the decoding, the
    reply's length); `on_transcript(turn, text)` is told each turn's words on the worker's thread,
    before the reply is generated. Turns are numbered: only the live one is worked on, only the
    released one plays."""

    def __init__(self, settings, stages: CascadeStages, emit: Callable[..., None],
                 on_transcript: Callable[[int, str], None] | None = None):
        self.settings = settings
        self.asr, self.llm, self.tts = stages.recogniser, stages.language_model, stages.voice
        self.emit = emit
        self.on_transcript = on_transcript or (lambda turn, text: None)
        self.out = AudioQueue()
        self.history: list[tuple[str, str]] = []  # (the caller's words, the reply spoken), turn by turn
        self.topic = ""
        self.failure: str | None = None  # why the call cannot go on (an LLM endpoint stopped)
        self._lock = threading.Lock()
        self.live = 0  # the turn the worker should be working on
        self.released = -1  # the turn whose audio may be played
        self.generating = -1  # the turn the worker is producing
        self._pending: list[np.ndarray] = []  # audio of the live turn, not yet released
        self._jobs: queue.Queue[ReplyJob | None] = queue.Queue()
        self._thread = threading.Thread(target=self._work, name="cascade-worker", daemon=True)
        self._reply_started = False

    def start(self, topic: str) -> None:
        self.topic = topic
        self.llm.check()  # an endpoint unreachable, or not serving the model: the call fails before it starts
        self._thread.start()
        self._jobs.put(ReplyJob(-1, None))  # compute the system prompt's LLM cache before the first turn

    def close(self) -> None:
        self.drop_turn()
        self._jobs.put(None)
        if self._thread.is_alive():
            self._thread.join(timeout=10)

    # the system's side (the call's thread)

    def drop_turn(self) -> int:
        """Stop working on the live turn (whatever was prepared of it is dropped); the new live turn."""
        with self._lock:
            self.live += 1
            self._pending = []
            return self.live

    def prepare(self, audio: np.ndarray, heard_before: str = "") -> int:
        """Start replying to `audio` as a new live turn (not played until released); the turn."""
        turn = self.drop_turn()
        self._jobs.put(ReplyJob(turn, audio, heard_before))
        return turn

    def release(self, opener: Callable[[], tuple[str, np.ndarray]] | None = None) -> tuple[str, np.ndarray] | None:
        """Play the live turn's reply: what is ready now, the rest as it comes. If nothing is ready
        and `opener` is given, its clip (a "well," that takes the floor) plays first; it is returned."""
        with self._lock:
            self.released = self.live
            chosen = opener() if opener is not None and not self._pending else None
            if chosen is not None:
                self.out.put(chosen[1])
            for audio in self._pending:
                self.out.put(audio)
            self._pending = []
        self._reply_started = False
        return chosen

    def stop_speaking(self) -> int:
        """Drop the reply being played and the turn being prepared; the samples dropped."""
        dropped = self.out.clear()
        self.drop_turn()
        return dropped

    @property
    def making_released(self) -> bool:
        """The released reply is still being generated (between its chunks, the queue may be empty)."""
        return self.released >= 0 and self.generating == self.released

    def take(self, n: int = BLOCK) -> np.ndarray | None:
        """The reply's next `n` samples, or None; its first block is logged as `audio_start`."""
        block = self.out.take(n)
        if block is not None and not self._reply_started:
            self._reply_started = True
            self.emit(EventKind.AUDIO_START)
        return block

    # the worker's thread: recognise, generate, synthesize

    def is_live(self, turn: int) -> bool:
        return self.live == turn

    def _deliver(self, turn: int, audio: np.ndarray) -> None:
        with self._lock:
            if turn == self.released:
                self.out.put(audio)
            elif turn == self.live:
                self._pending.append(audio)

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            if job.audio is None:
                self.llm.warm(self.settings.reply_messages(self.topic, [], "")[:1])
                continue
            if not self.is_live(job.turn):
                continue
            self.generating = job.turn
            try:
                self._respond(job)
            except SystemError_ as e:  # the LLM endpoint stopped or stalled: the call ends failed, recording kept
                self.failure = str(e)
                self.emit(EventKind.ERROR, message=str(e))
                return
            except Exception as e:  # a failing model must not end the call silently
                self.emit(EventKind.ERROR, message=f"{type(e).__name__}: {e}")
            finally:
                self.generating = -1

    def _respond(self, job: ReplyJob) -> None:
        t0 = time.monotonic()
        heard = self.asr.transcribe(job.audio).strip()
        if job.heard_before and not re.search(r"\w", heard):
            heard = ""  # the rest was silence (Whisper may write ".")
        text = " ".join(filter(None, (job.heard_before, heard)))
        self.emit(EventKind.TRANSCRIPT, text=text, asr_s=round(time.monotonic() - t0, 3), turn=job.turn,
                  audio_s=round(len(job.audio) / SAMPLE_RATE, 2))
        self.on_transcript(job.turn, text)
        if not text or not self.is_live(job.turn):
            return
        reply = self._generate(job.turn, text, t0)
        if reply is None:
            return
        self.history.append((text, reply))
        self.emit(EventKind.REPLY, text=reply, total_s=round(time.monotonic() - t0, 3), turn=job.turn)

    def _generate(self, turn: int, text: str, t0: float) -> str | None:
        """The reply to `text`, spoken chunk by chunk as the LLM writes it; None if the turn was dropped."""
        s = self.settings
        said_back = s.recalled_reply(self.history, text)
        if said_back is not None:
            self._speak(turn, said_back, True, t0)
            return said_back if self.is_live(turn) else None
        messages = s.reply_messages(self.topic, self.history, text)
        decoding = s.decoding(len(self.history))
        reply, chunk, first, sentences = "", "", True, 0  # reply: what was spoken
        asked = time.monotonic()
        for piece in self.llm.stream(messages, s.max_new_tokens, stop=lambda: not self.is_live(turn),
                                     decoding=decoding):
            if first and not chunk:
                self.emit(EventKind.FIRST_TOKEN, llm_s=round(time.monotonic() - asked, 3), turn=turn,
                          prompt_messages=len(messages), **asdict(decoding))
            if first and breaks_before(chunk, piece, s.first_chunk_min_words, s.first_chunk_max_words):
                self._speak(turn, chunk, first, t0)
                reply, chunk, first = chunk, "", False
            chunk += piece
            if ends_chunk(chunk, first):
                self._speak(turn, chunk, first, t0)
                sentences += bool(SENTENCE_END.search(chunk))
                reply, chunk, first = reply + chunk, "", False
                if sentences >= s.max_sentences:
                    break  # leaving the stream stops the generation
        if not self.is_live(turn):
            return None
        if chunk.strip() and sentences < s.max_sentences:
            self._speak(turn, chunk, first, t0)
            reply += chunk
        return reply.strip()

    def _speak(self, turn: int, text: str, first: bool, t0: float) -> None:
        if not self.is_live(turn) or not text.strip():
            return
        if first:
            self.emit(EventKind.DECIDED, text=text.strip(), after_s=round(time.monotonic() - t0, 3), turn=turn)
        else:  # logged as it is voiced: a reply cut off never gets its whole text in a "reply" event
            self.emit(EventKind.REPLY_CHUNK, text=text.strip(), turn=turn)
        for audio in self.tts.synthesize(text.strip()):
            if not self.is_live(turn):
                return
            if first:  # the voice opens with ~40-60 ms of silence: the participant is waiting
                audio, first = trim_leading_silence(audio), False
            self._deliver(turn, audio)

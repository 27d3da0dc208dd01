"""The cascaded dialogue system (the paper's baseline): Silero VAD endpointing -> faster-whisper ->
a chat LLM (SmolLM2-135M-Instruct by default) -> Piper TTS.

Latency levers (end of the participant's speech to the first reply audio):
- Speculation: recognition and generation start after `speculate_ms` of silence, while the
  endpointer still waits for `min_silence_ms`; if the participant goes on speaking the work is
  dropped, otherwise the reply is already (partly) synthesized when the turn is confirmed.
- Streaming: the LLM's text goes to the TTS sentence by sentence, the first chunk as soon as it
  is a clause or a short phrase (`ends_chunk`, `breaks_before`), so speech starts while the LLM still writes.

Barge-in (`barge_in`): "ignore" (default, as the paper's cascade: the mic is not listened to
while the system speaks) or "yield" (the system stops when the participant speaks for
`barge_in_ms` over it).

Config keys (all optional): vad_threshold, min_silence_ms, min_speech_ms, speech_pad_ms,
speculate_ms, barge_in, barge_in_ms, asr_model (faster-whisper model id or directory), llm
(transformers model id or directory), llm_runtime ("ctranslate2", "transformers", or "llama.cpp" with a
.gguf), llm_endpoint + llm_api_model + llm_api_key_env or llm_api_key_file + llm_timeout_s
(an OpenAI-compatible server instead of a local LLM), tts_voice (Piper .onnx path), system_prompt, max_new_tokens,
max_sentences, first_chunk_min_words, first_chunk_max_words, history_turns, history_reply_sentences,
earlier_user_turns, recall_turns, repetition_penalty, suppressed_words, sampling_topk,
sampling_temperature, seed, threads, data_root.

Replies (chosen with studies.reply_quality on benchmarks/data/conversations_fitting.json,
confirmed on conversations_confirming.json: docs/dialogue-systems.md): a person's persona in
the system prompt, the participant's turn before this one, apologies and assistant words never
generated, at most 32 tokens and two sentences; a question about the conversation itself
(RECALL_QUESTION) gets the participant's earlier turns quoted in its own message.
"""

from __future__ import annotations

import queue
import re
import threading
import time
from dataclasses import asdict, dataclass, replace
from typing import Self

import numpy as np

from studies.realtime_keys import key_reference_problem
from studies.systems.base import (
    BLOCK,
    SAMPLE_RATE,
    AudioQueue,
    DialogueSystem,
    SystemError_,
)
from studies.systems.components import (
    ChatLLM,
    Decoding,
    PiperTTS,
    StreamingVAD,
    WhisperASR,
    load_vad_session,
)
from studies.systems.events import EventKind
from studies.systems.settings import settings_from_config

# Clause ends after which text is spoken: sentence ends, and for the first chunk a comma too.
_SENTENCE_END = re.compile(r"[.!?]+[\"')\]]?\s*$")
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
    if _SENTENCE_END.search(chunk):
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


LLM_RUNTIMES = ("ctranslate2", "transformers", "llama.cpp")
# What the packaged 135M model opened 39 of 60 replies with ("I'm sorry for your loss", "as a
# voice assistant I don't have...", "as an online chatbot"): never generated (the local runtimes;
# an endpoint is not told).
SUPPRESSED_WORDS = ("sorry", "apologize", "apologise", "assistant", "AI", "chatbot")


@dataclass(frozen=True)
class CascadedSettings:
    """The `cascaded` kind's settings (the study file's `config` keys; see the module docstring).
    How each value was chosen: docs/dialogue-systems.md#cascaded."""

    vad_threshold: float = 0.3  # Silero's P(speech) at which a frame is speech (silence: 0.15 below it)
    min_silence_ms: float = 250.0  # ms of silence that end the participant's turn
    min_speech_ms: float = 500.0  # ms: shorter speech is not an utterance
    speech_pad_ms: float = 500.0  # ms of audio before the speech kept with the utterance
    speculate_ms: float = 0.0  # ms of silence before the reply is prepared (0: at the first frame below vad_threshold)
    barge_in: str = "ignore"  # "ignore": the mic is not heard while speaking; "yield": stop when talked over
    barge_in_ms: float = 200.0  # ms of the participant's speech over the system's that stop it ("yield")
    asr_model: str | None = None  # faster-whisper model id or directory (None: the packaged tiny.en)
    llm: str | None = None  # a transformers model id or directory (None: the packaged SmolLM2-135M-Instruct)
    llm_runtime: str = "ctranslate2"  # "ctranslate2" (float32), "transformers" or "llama.cpp" (the packaged GGUF)
    llm_endpoint: str | None = None  # an OpenAI-compatible server's URL, used instead of a local LLM
    llm_api_model: str | None = None  # the model name sent to llm_endpoint (None: the server's only model)
    llm_api_key_env: str | None = None  # the environment variable holding llm_endpoint's key (never the key itself)
    llm_api_key_file: str | None = None  # or the file holding it; read at each reply
    llm_timeout_s: float = 10.0  # s llm_endpoint may take for a first token or the next: past it the call fails
    tts_voice: str | None = None  # a Piper .onnx voice (None: the packaged en_US-joe-medium)
    system_prompt: str = (  # the LLM's system prompt; `{topic}` is the participant's topic
        "You are Sam. You are chatting on the phone with someone about {topic}. Talk like a friendly person, "
        "not like an assistant: answer what they just said with something specific, in one or two short sentences."
    )
    max_new_tokens: int = 32  # tokens, the most a reply may have
    max_sentences: int = 2  # sentences, the most spoken of a reply (the 135M model often runs on)
    first_chunk_min_words: int = 3  # words before the first chunk may break at a phrase start (breaks_before)
    first_chunk_max_words: int = 8  # words at which the first chunk is spoken whatever follows
    history_turns: int = 0  # whole exchanges (with the system's reply) in the prompt: the 135M model copies the reply
    history_reply_sentences: int = 1  # of each reply in those exchanges, the first sentences kept (0: whole)
    earlier_user_turns: int = 1  # the participant's words of the turns before those, ~2 ms of prefill a token
    recall_turns: int = 8  # a question about the conversation (RECALL_QUESTION) quotes this many earlier turns (0: none)
    repetition_penalty: float = 1.2  # components.Decoding's penalty on tokens already in the prompt or reply
    suppressed_words: tuple[str, ...] = SUPPRESSED_WORDS  # words a reply never holds (components.Decoding)
    sampling_topk: int = 1  # 1: greedy (the same conversation, the same replies); > 1: sampled
    sampling_temperature: float = 1.0  # the sampling temperature (with sampling_topk > 1)
    seed: int = 0  # reply n of a sampled call is drawn with seed + n (CTranslate2: once per process)
    threads: int = 2  # the CTranslate2 LLM's threads (ASR, LLM and TTS run one after another)
    data_root: str | None = None  # converted models go under its models/ (None: the default data root)

    def decoding(self, reply_index: int) -> Decoding:
        """The decoding of the call's `reply_index`-th reply (0-based)."""
        # the predictive kind's seed may be None (fresh backchannel draws): its replies then draw from 0
        return Decoding(self.repetition_penalty, self.sampling_topk, self.sampling_temperature,
                        (self.seed or 0) + reply_index, self.suppressed_words)

    def reply_messages(self, topic: str, history: list[tuple[str, str]], text: str) -> list[dict]:
        """The whole prompt of a reply to `text` after the exchanges of `history`: a question about
        the conversation itself gets `recall_prompt`, any other turn `reply_prompt`."""
        system = [{"role": "system", "content": self.system_prompt.format(topic=topic or "anything")}]
        if self.recall_turns > 0 and history and (RECALL_QUESTION.search(text) or ASKS_WHAT_YOU_SAID.search(text)):
            return system + recall_prompt(history, text, self.recall_turns)
        return system + reply_prompt(history, text, self.history_turns, self.earlier_user_turns,
                                     self.history_reply_sentences)

    @property
    def llm_key_config(self) -> dict:
        """How llm_endpoint's key is named, as studies.realtime_keys reads it."""
        names = {"api_key_env": self.llm_api_key_env, "api_key_file": self.llm_api_key_file}
        return {name: value for name, value in names.items() if value is not None}

    @classmethod
    def from_config(cls, config: dict) -> Self:
        if isinstance(config, dict) and config.get("llm_api_key") not in (None, ""):
            raise SystemError_("the config holds a literal llm_api_key, which would be stored in the database and "
                               "exported: name the key instead with llm_api_key_env: VARIABLE or llm_api_key_file: PATH")
        settings = settings_from_config(cls, _from_labels(config))
        problem = key_reference_problem(settings.llm_key_config)
        if problem:
            raise SystemError_(f"the LLM endpoint's key {problem.replace('api_key', 'llm_api_key')}")
        if not settings.llm_timeout_s > 0:
            raise SystemError_(f"llm_timeout_s must be a positive number of seconds, got {settings.llm_timeout_s!r}")
        words = settings.suppressed_words
        if not isinstance(words, (list, tuple)) or not all(isinstance(w, str) and w.strip() for w in words):
            raise SystemError_(f"suppressed_words must be a list of words, got {settings.suppressed_words!r}")
        if settings.llm_runtime not in LLM_RUNTIMES:
            raise SystemError_(f"llm_runtime must be one of {', '.join(LLM_RUNTIMES)}, got {settings.llm_runtime!r}")
        if settings.barge_in not in ("ignore", "yield"):
            raise SystemError_(f"barge_in must be 'ignore' or 'yield', got {settings.barge_in!r}")
        return replace(settings, suppressed_words=tuple(settings.suppressed_words))


# Descriptive labels (as the demo study writes them) that name the packaged default models.
PACKAGED_LABELS = {
    "vad": ("silero",),
    "asr": ("faster-whisper tiny.en", "tiny.en", "whisper tiny.en"),
    "llm": ("SmolLM2-135M-Instruct",),
    "tts": ("piper en_US-joe-medium", "en_US-joe-medium"),
}


def _from_labels(config: dict) -> dict:
    """Accept {"vad": "silero", "asr": "...", "llm": "...", "tts": "..."} labels: the packaged
    models' names mean the defaults; other asr/tts values are model ids or paths."""
    if not isinstance(config, dict):
        return config  # settings_from_config says what is wrong with it
    config = dict(config)
    for key, packaged in PACKAGED_LABELS.items():
        if key not in config:
            continue
        value = config[key]
        if value in packaged:
            config.pop(key)
            if key == "llm":
                config["llm"] = None
        elif key == "vad":
            raise SystemError_(f"vad must be 'silero', got {value!r}")
        elif key == "asr":
            config["asr_model"] = config.pop("asr")
        elif key == "tts":
            config["tts_voice"] = config.pop("tts")
    return config


def first_sentences(text: str, n: int) -> str:
    """The first `n` sentences of `text` (0: all of it).

    >>> first_sentences("Start early. The trail gets hot! Bring water.", 2)
    'Start early. The trail gets hot!'
    """
    if n <= 0:
        return text.strip()
    return "".join(re.findall(r"[^.!?]*(?:[.!?]+|$)", text)[:n]).strip()


def reply_prompt(history: list[tuple[str, str]], text: str, exchanges: int, earlier_user_turns: int,
                 reply_sentences: int = 0) -> list[dict]:
    """The chat messages after the system prompt for a reply to `text`: the participant's words of
    `earlier_user_turns` turns, then the last `exchanges` exchanges (each reply cut to its first
    `reply_sentences` sentences; 0: whole), then `text`.

    The earlier turns carry the participant's words only: a small model copies its own earlier
    answers, and the participant's words are what the reply must follow.

    >>> history = [("I like hiking.", "Nice!"), ("Where to go?", "The Alps."), ("When?", "In June.")]
    >>> [m["role"] for m in reply_prompt(history, "Thanks.", exchanges=1, earlier_user_turns=1)]
    ['user', 'user', 'assistant', 'user']
    >>> reply_prompt(history, "Thanks.", exchanges=1, earlier_user_turns=1)[0]["content"]
    'Where to go?'
    """
    kept = history[len(history) - exchanges:] if exchanges > 0 else []
    before = history[:len(history) - len(kept)]
    messages = [{"role": "user", "content": user} for user, _ in before[len(before) - earlier_user_turns:]
                if earlier_user_turns > 0]
    for user, assistant in kept:
        messages += [{"role": "user", "content": user},
                     {"role": "assistant", "content": first_sentences(assistant, reply_sentences)}]
    return messages + [{"role": "user", "content": text}]


# A turn that asks about the conversation itself: what the participant said ("what did I say my
# name was?", "do you remember...?") or what the system said (ASKS_WHAT_YOU_SAID).
RECALL_QUESTION = re.compile(
    r"\b(did|have|had) (i|we) (just |already )?(say|tell|mention)\b|\bremember\b"
    r"|\b(you|i) (just )?(said|told (you|me))\b", re.IGNORECASE)
ASKS_WHAT_YOU_SAID = re.compile(
    r"\bwhat (did|was it) you (just )?(say|said|tell)\b|\byou (just )?(said|told me)\b"
    r"|\b(say|repeat) (that|it) again\b|\blast thing you\b", re.IGNORECASE)


def recall_prompt(history: list[tuple[str, str]], text: str, turns: int) -> list[dict]:
    r"""The message after the system prompt for a question about the conversation: the
    participant's last `turns` turns quoted one a line, the system's last reply when the question
    asks what it said, then the question.

    The 135M model does not look back through earlier messages for an answer (2 of 8 recall
    questions answered right with them as messages) but reads lines quoted in the question's own
    message (6 of 8); quoted for every turn, they pull each reply away from the turn it answers
    (relevance 0.55 -> 0.22 nats a token on the fitting conversations), so only a recall question
    gets them (docs/dialogue-systems.md). Its own last reply, quoted to a question about the
    participant's words, was copied as the answer.

    >>> history = [("I'm Anna.", "Hi Anna! Nice day."), ("I hike.", "Great.")]
    >>> recall_prompt(history, "What's my name? Do you remember?", 8)[0]["content"]
    "What I told you so far:\nI'm Anna.\nI hike.\n\nWhat's my name? Do you remember?"
    >>> recall_prompt(history, "Can you say that again?", 8)[0]["content"]
    "What I told you so far:\nI'm Anna.\nI hike.\n\nWhat you said last: Great.\n\nCan you say that again?"
    """
    told = "\n".join(user for user, _ in history[len(history) - turns:])
    said = history[-1][1] if history and ASKS_WHAT_YOU_SAID.search(text) else ""
    last = f"\n\nWhat you said last: {said}" if said else ""
    return [{"role": "user", "content": f"What I told you so far:\n{told}{last}\n\n{text}"}]


@dataclass
class ReplyJob:
    turn: int
    audio: np.ndarray | None  # None: warm the LLM up
    heard_before: str = ""  # the turn's words before `audio`, already recognised


class CascadedSystem(DialogueSystem):
    settings_class = CascadedSettings

    def __init__(self, config: dict, on_event=None, components=None, settings=None):
        super().__init__(config, on_event, settings)
        s = self.settings
        # Components can be shared between calls (loading takes seconds): see `load_components`.
        self.vad_model, self.asr, self.llm, self.tts = components or load_components(s)
        self.vad = StreamingVAD(self.vad_model, threshold=s.vad_threshold)
        self.out = AudioQueue()
        self.history: list[tuple[str, str]] = []
        self._lock = threading.Lock()
        self._live = 0  # the turn the worker should be working on
        self._released = -1  # the turn whose audio may be played
        self._pending: list[np.ndarray] = []  # audio of the live turn, not yet released
        self._jobs: queue.Queue[ReplyJob | None] = queue.Queue()
        self._worker = threading.Thread(target=self._work, name="cascade-worker", daemon=True)
        # endpointing state, in samples of mic audio received
        self._received = 0
        self._history_audio = np.zeros(0, dtype=np.float32)  # the last speech_pad_ms of audio
        self._utterance: list[np.ndarray] | None = None
        self._speech_samples = 0
        self._silence_samples = 0
        self._speculated = False
        self._overlap_samples = 0  # participant speech while the system speaks (barge-in)
        self._was_speaking = False
        self._reply_started = False
        self._generating = -1  # the turn the worker is producing

    def start(self, topic: str = "") -> None:
        super().start(topic)
        self.llm.check()  # an endpoint unreachable, or not serving the model: the call fails before it starts
        self._worker.start()
        self._jobs.put(ReplyJob(-1, None))  # compute the system prompt's LLM cache before the first turn

    def _system_messages(self) -> list[dict]:
        return self.settings.reply_messages(self.topic, [], "")[:1]

    def close(self) -> None:
        with self._lock:
            self._live += 1
        self._jobs.put(None)
        if self._worker.is_alive():
            self._worker.join(timeout=10)

    # audio in (the call's thread, every 20 ms)

    def receive(self, block: np.ndarray) -> None:
        s = self.settings
        block = np.asarray(block, dtype=np.float32)
        self._received += len(block)
        # Speaking: audio queued, or a released reply still being generated (between its chunks).
        speaking = len(self.out) > 0 or (self._generating == self._released and self._released >= 0)
        probabilities = self.vad.push(block)
        for p in probabilities:
            self._step(p, speaking)
        if self._utterance is not None:
            self._utterance.append(block)
        pad = int(s.speech_pad_ms * SAMPLE_RATE / 1000)
        self._history_audio = np.concatenate([self._history_audio, block])[-pad:]

    def _step(self, probability: float, speaking: bool) -> None:
        """One 32 ms VAD frame of the endpointer."""
        s = self.settings
        frame = self.vad.frame
        is_speech = probability >= s.vad_threshold
        is_silence = probability < max(s.vad_threshold - 0.15, 0.01)
        if speaking:
            if s.barge_in == "ignore":
                return  # the paper's cascade does not listen while it speaks
            if is_speech:
                self._overlap_samples += frame
            elif is_silence:
                self._overlap_samples = 0
            if self._overlap_samples >= s.barge_in_ms * SAMPLE_RATE / 1000:
                dropped = self.out.clear()
                with self._lock:
                    self._live += 1
                    self._pending = []
                self.emit(EventKind.YIELDED, dropped_s=round(dropped / SAMPLE_RATE, 3))
                self._overlap_samples = 0
                self._begin_utterance()
            return
        if self._utterance is None:
            if is_speech:
                self._begin_utterance()
            return
        if is_speech:
            self._speech_samples += frame
            if self._speculated:
                # the participant went on: drop the speculative reply
                with self._lock:
                    self._live += 1
                    self._pending = []
                self._speculated = False
                self.emit(EventKind.SPECULATION_DROPPED)
            self._silence_samples = 0
        elif is_silence:
            self._silence_samples += frame
        else:
            self._speech_samples += frame
        self._listening(is_speech)
        long_enough = self._speech_samples >= s.min_speech_ms * SAMPLE_RATE / 1000
        if (long_enough and not self._speculated and not is_speech
                and self._silence_samples >= s.speculate_ms * SAMPLE_RATE / 1000):
            self._speculated = True
            with self._lock:
                self._live += 1
                self._pending = []
                turn = self._live
            self._jobs.put(ReplyJob(turn, np.concatenate(self._utterance)))
        if self._silence_samples >= s.min_silence_ms * SAMPLE_RATE / 1000:
            if long_enough:
                with self._lock:
                    self._released = self._live
                    for audio in self._pending:
                        self.out.put(audio)
                    self._pending = []
                self._reply_started = False
                self.emit(EventKind.TURN_END, speech_s=round(self._speech_samples / SAMPLE_RATE, 3))
            self._utterance = None
            self._speculated = False

    def _listening(self, is_speech: bool) -> None:
        """Called on every VAD frame of a participant utterance (a hook for listener behaviour)."""

    def _begin_utterance(self) -> None:
        self._utterance = [self._history_audio.copy()]
        self._speech_samples = self.vad.frame
        self._silence_samples = 0
        self._speculated = False
        self.emit(EventKind.SPEECH_START)

    # audio out (the call's thread, every 20 ms)

    def send(self) -> np.ndarray | None:
        block = self.out.take(BLOCK)
        if block is not None and not self._reply_started:
            self._reply_started = True
            self.emit(EventKind.AUDIO_START)
        return block

    # the worker thread: recognize, generate, synthesize

    def _is_live(self, turn: int) -> bool:
        return self._live == turn

    def _deliver(self, turn: int, audio: np.ndarray) -> None:
        with self._lock:
            if turn == self._released:
                self.out.put(audio)
            elif turn == self._live:
                self._pending.append(audio)

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            if job.audio is None:
                self.llm.warm(self._system_messages())
                continue
            if not self._is_live(job.turn):
                continue
            self._generating = job.turn
            try:
                self._respond(job)
            except SystemError_ as e:  # the LLM endpoint stopped or stalled: the call ends failed, recording kept
                self.failure = str(e)
                self.emit(EventKind.ERROR, message=str(e))
                return
            except Exception as e:  # a failing model must not end the call silently
                self.emit(EventKind.ERROR, message=f"{type(e).__name__}: {e}")
            finally:
                self._generating = -1

    def _respond(self, job: ReplyJob) -> None:
        s = self.settings
        t0 = time.monotonic()
        heard = self.asr.transcribe(job.audio).strip()
        if job.heard_before and not re.search(r"\w", heard):
            heard = ""  # the rest was silence (Whisper may write ".")
        text = " ".join(filter(None, (job.heard_before, heard)))
        self.emit(EventKind.TRANSCRIPT, text=text, asr_s=round(time.monotonic() - t0, 3), turn=job.turn,
                  audio_s=round(len(job.audio) / SAMPLE_RATE, 2))
        self._heard(job.turn, text)
        if not text or not self._is_live(job.turn):
            return
        messages = s.reply_messages(self.topic, self.history, text)
        decoding = s.decoding(len(self.history))
        reply, chunk, first, sentences = "", "", True, 0  # reply: what was spoken
        asked = time.monotonic()
        for piece in self.llm.stream(messages, s.max_new_tokens, stop=lambda: not self._is_live(job.turn),
                                     decoding=decoding):
            if first and not chunk:
                self.emit(EventKind.FIRST_TOKEN, llm_s=round(time.monotonic() - asked, 3), turn=job.turn,
                          prompt_messages=len(messages), **asdict(decoding))
            if first and breaks_before(chunk, piece, s.first_chunk_min_words, s.first_chunk_max_words):
                self._speak(job.turn, chunk, first, t0)
                reply, chunk, first = chunk, "", False
            chunk += piece
            if ends_chunk(chunk, first):
                self._speak(job.turn, chunk, first, t0)
                sentences += bool(_SENTENCE_END.search(chunk))
                reply, chunk, first = reply + chunk, "", False
                if sentences >= s.max_sentences:
                    break  # leaving the stream stops the generation
        if not self._is_live(job.turn):
            return
        if chunk.strip() and sentences < s.max_sentences:
            self._speak(job.turn, chunk, first, t0)
            reply += chunk
        self.history.append((text, reply.strip()))
        self.emit(EventKind.REPLY, text=reply.strip(), total_s=round(time.monotonic() - t0, 3), turn=job.turn)

    def _heard(self, turn: int, text: str) -> None:
        """Called on the worker thread with each turn's transcript (a hook: a system that decides
        turn ends from the words reads them here)."""

    def _speak(self, turn: int, text: str, first: bool, t0: float) -> None:
        if not self._is_live(turn) or not text.strip():
            return
        if first:
            self.emit(EventKind.DECIDED, text=text.strip(), after_s=round(time.monotonic() - t0, 3), turn=turn)
        else:  # logged as it is voiced: a reply cut off never gets its whole text in a "reply" event
            self.emit(EventKind.REPLY_CHUNK, text=text.strip(), turn=turn)
        for audio in self.tts.synthesize(text.strip()):
            if not self._is_live(turn):
                return
            if first:  # the voice opens with ~40-60 ms of silence: the participant is waiting
                audio, first = trim_leading_silence(audio), False
            self._deliver(turn, audio)


# What is loading, step by step, for a page that waits on it (studies.preparation).
LOAD_STEPS = (
    "the speech detector",
    "the speech recogniser",
    "the language model (converted once after installation: about a minute)",
    "the voice",
)


def load_components(settings: CascadedSettings, on_step=None):
    """(vad model, asr, llm, tts), loaded once and shareable between calls. `on_step(n, what)`
    is told before each of the LOAD_STEPS."""
    step = on_step or (lambda n, what: None)
    step(0, LOAD_STEPS[0])
    vad = load_vad_session()
    step(1, LOAD_STEPS[1])
    # One thread: as fast on a short turn's 10 s window, and a second thread of Whisper's
    # sat idle and slowed every LLM token by half (measured 29 -> 50 ms).
    asr = WhisperASR(settings.asr_model, threads=1)
    step(2, LOAD_STEPS[2])
    llm = ChatLLM.from_settings(settings)
    step(3, LOAD_STEPS[3])
    return vad, asr, llm, PiperTTS(settings.tts_voice)

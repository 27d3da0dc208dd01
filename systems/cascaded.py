"""The cascaded dialogue system (the paper's baseline): Silero VAD endpointing -> faster-whisper ->
a chat LLM (SmolLM2-135M-Instruct by default) -> Piper TTS.

Latency levers (end of the participant's speech to the first reply audio):
- Speculation: recognition and generation start after `speculate_ms` of silence, while the
  endpointer still waits for `min_silence_ms`; if the participant goes on speaking the work is
  dropped, otherwise the reply is already (partly) synthesized when the turn is confirmed.
- Streaming: the LLM's text goes to the TTS sentence by sentence, the first chunk as soon as it
  is a clause or a short phrase (systems.reply_worker), so speech starts while the LLM still writes.

Barge-in (`barge_in`): "ignore" (default, as the paper's cascade: the mic is not listened to
while the system speaks) or "yield" (the system stops when the participant speaks for
`barge_in_ms` over it).

Config keys (all optional): vad_threshold, min_silence_ms, min_speech_ms, speech_pad_ms,
speculate_ms, barge_in, barge_in_ms, asr_model (faster-whisper model id or directory), llm
(transformers model id or directory), llm_runtime ("ctranslate2", "transformers", or "llama.cpp" with a
.gguf), llm_endpoint + llm_api_model + llm_api_key_env or llm_api_key_file + llm_timeout_s
(an OpenAI-compatible server instead of a local LLM), tts_voice (Piper .onnx path), system_prompt, max_new_tokens,
max_sentences, first_chunk_min_words, first_chunk_max_words, history_turns, history_reply_sentences,
earlier_user_turns, recall_turns, recall_said_back, recall_related_words, repetition_penalty,
suppressed_words, sampling_topk, sampling_temperature, seed, threads, llm_compute_type, data_root.

Replies (chosen with studies.reply_quality on benchmarks/data/conversations_fitting.json,
confirmed on conversations_confirming.json: docs/dialogue-systems.md): a person's persona in
the system prompt, the participant's turn before this one, apologies and assistant words never
generated, at most 32 tokens and two sentences; a question about the conversation itself
(RECALL_QUESTION) gets the participant's earlier turns quoted in its own message, and one about
what the participant said is answered with the earlier turn it asks about, said back
(`recall_said_back`), found by shared words or else by related ones (`recall_related_words`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Self

import numpy as np

from systems.api_keys import key_reference_problem
from systems.base import SAMPLE_RATE, SystemError_
from systems.embedded import EmbeddedSystem
from systems.events import EventKind
from systems.language_models import Decoding
from systems.reply_prompts import asks_about_the_conversation, recall_prompt, recalled_answer, reply_prompt
from systems.settings import settings_from_config
from systems.word_vectors import packaged_word_vectors


LLM_RUNTIMES = ("ctranslate2", "transformers", "llama.cpp")
LLM_COMPUTE_TYPES = ("float32", "int8")  # CTranslate2's on this CPU (int16 has no fast kernel here)
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
    llm_runtime: str = "ctranslate2"  # "ctranslate2" (llm_compute_type), "transformers" or "llama.cpp" (the packaged GGUF)
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
    first_chunk_max_words: int = 5  # words at which the first chunk is spoken whatever follows (8: 0.03 s later)
    history_turns: int = 0  # whole exchanges (with the system's reply) in the prompt: the 135M model copies the reply
    history_reply_sentences: int = 1  # of each reply in those exchanges, the first sentences kept (0: whole)
    earlier_user_turns: int = 1  # the participant's words of the turns before those, ~2 ms of prefill a token
    recall_turns: int = 8  # a question about the conversation (RECALL_QUESTION) quotes this many earlier turns (0: none)
    recall_said_back: bool = True  # a question about the participant's words: the turn it asks about, said back
    recall_related_words: bool = True  # ...found, where no turn shares a word with it, by related words (word_vectors)
    repetition_penalty: float = 1.2  # language_models.Decoding's penalty on tokens already in the prompt or reply
    suppressed_words: tuple[str, ...] = SUPPRESSED_WORDS  # words a reply never holds (language_models.Decoding)
    sampling_topk: int = 1  # 1: greedy (the same conversation, the same replies); > 1: sampled
    sampling_temperature: float = 1.0  # the sampling temperature (with sampling_topk > 1)
    seed: int = 0  # reply n of a sampled call is drawn with seed + n (CTranslate2: once per process)
    # The CTranslate2 LLM's threads. One: with `speech`'s sleeping OpenMP threads a second one costs
    # more in waking than it brings (42 against 59 ms a token here, the first audio 0.13 s sooner).
    threads: int = 1
    # The CTranslate2 LLM's weights: "float32", or "int8" (the first audio 0.1 s sooner, replies
    # that answer the turn less well: docs/dialogue-systems.md).
    llm_compute_type: str = "float32"
    data_root: str | None = None  # converted models go under its models/ (None: the default data root)

    def decoding(self, reply_index: int) -> Decoding:
        """The decoding of the call's `reply_index`-th reply (0-based)."""
        # the predictive kind's seed may be None (fresh backchannel draws): its replies then draw from 0
        return Decoding(self.repetition_penalty, self.sampling_topk, self.sampling_temperature,
                        (self.seed or 0) + reply_index, self.suppressed_words)

    def recalled_reply(self, history: list[tuple[str, str]], text: str) -> str | None:
        """The reply to a question about what the participant said, said back from their earlier
        turns without the language model (`recalled_answer`); None: the language model replies."""
        if not self.recall_said_back or self.recall_turns <= 0:
            return None
        def related(words: list[str], others: list[str]) -> float:  # loaded at the first question that needs it
            return packaged_word_vectors(self.data_root).relatedness(words, others)

        return recalled_answer(history, text, self.recall_turns, related if self.recall_related_words else None)

    def reply_messages(self, topic: str, history: list[tuple[str, str]], text: str) -> list[dict]:
        """The whole prompt of a reply to `text` after the exchanges of `history`: a question about
        the conversation itself gets `recall_prompt`, any other turn `reply_prompt`."""
        system = [{"role": "system", "content": self.system_prompt.format(topic=topic or "anything")}]
        if self.recall_turns > 0 and history and asks_about_the_conversation(text):
            return system + recall_prompt(history, text, self.recall_turns)
        return system + reply_prompt(history, text, self.history_turns, self.earlier_user_turns,
                                     self.history_reply_sentences)

    @property
    def llm_key_config(self) -> dict:
        """How llm_endpoint's key is named, as systems.api_keys reads it."""
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
        for name in ("recall_said_back", "recall_related_words"):
            if not isinstance(getattr(settings, name), bool):
                raise SystemError_(f"{name} must be true or false, got {getattr(settings, name)!r}")
        if not settings.llm_timeout_s > 0:
            raise SystemError_(f"llm_timeout_s must be a positive number of seconds, got {settings.llm_timeout_s!r}")
        words = settings.suppressed_words
        if not isinstance(words, (list, tuple)) or not all(isinstance(w, str) and w.strip() for w in words):
            raise SystemError_(f"suppressed_words must be a list of words, got {settings.suppressed_words!r}")
        for name, allowed in (("llm_runtime", LLM_RUNTIMES), ("llm_compute_type", LLM_COMPUTE_TYPES)):
            if getattr(settings, name) not in allowed:
                raise SystemError_(f"{name} must be one of {', '.join(allowed)}, got {getattr(settings, name)!r}")
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


class CascadedSystem(EmbeddedSystem):
    """The stages in a row: the endpointer (here) hands each turn to the reply worker
    (systems.reply_worker), and releases its reply once `min_silence_ms` of silence confirm the turn."""

    settings_class = CascadedSettings

    def __init__(self, config: dict, on_event=None, components=None, settings=None):
        super().__init__(config, on_event, components, settings)
        self._overlap_samples = 0  # participant speech while the system speaks (barge-in)

    # audio in (the call's thread, every 20 ms)

    def receive(self, block: np.ndarray) -> None:
        s = self.settings
        block = np.asarray(block, dtype=np.float32)
        self._received += len(block)
        # Speaking: audio queued, or a released reply still being generated (between its chunks).
        speaking = len(self.replies.out) > 0 or self.replies.making_released
        for p in self.vad.push(block):
            if speaking:
                self._overlapped(p)
            else:
                self._step(p)
        if self._utterance is not None:
            self._utterance.append(block)
        pad = int(s.speech_pad_ms * SAMPLE_RATE / 1000)
        self._history_audio = np.concatenate([self._history_audio, block])[-pad:]

    def _overlapped(self, probability: float) -> None:
        """One 32 ms VAD frame while the system speaks: barge-in, as `barge_in` says."""
        s = self.settings
        if s.barge_in == "ignore":
            return  # the paper's cascade does not listen while it speaks
        if probability >= s.vad_threshold:
            self._overlap_samples += self.vad.frame
        elif probability < max(s.vad_threshold - 0.15, 0.01):
            self._overlap_samples = 0
        if self._overlap_samples >= s.barge_in_ms * SAMPLE_RATE / 1000:
            dropped = self.replies.stop_speaking()
            self.emit(EventKind.YIELDED, dropped_s=round(dropped / SAMPLE_RATE, 3))
            self._overlap_samples = 0
            self._begin_utterance()

    def _step(self, probability: float) -> None:
        """One 32 ms VAD frame of the endpointer while the caller has the floor."""
        s = self.settings
        frame = self.vad.frame
        is_speech = probability >= s.vad_threshold
        if self._utterance is None:
            if is_speech:
                self._begin_utterance()
            return
        if is_speech:
            self._speech_samples += frame
            if self._speculated:  # the participant went on: drop the speculative reply
                self.replies.drop_turn()
                self._speculated = False
                self.emit(EventKind.SPECULATION_DROPPED)
            self._silence_samples = 0
        elif probability < max(s.vad_threshold - 0.15, 0.01):
            self._silence_samples += frame
        else:
            self._speech_samples += frame
        self._listening(is_speech)
        long_enough = self._speech_samples >= s.min_speech_ms * SAMPLE_RATE / 1000
        if (long_enough and not self._speculated and not is_speech
                and self._silence_samples >= s.speculate_ms * SAMPLE_RATE / 1000):
            self._speculated = True
            self.replies.prepare(np.concatenate(self._utterance))
        if self._silence_samples >= s.min_silence_ms * SAMPLE_RATE / 1000:
            if long_enough:
                self.replies.release()
                self.emit(EventKind.TURN_END, speech_s=round(self._speech_samples / SAMPLE_RATE, 3))
            self._utterance = None
            self._speculated = False

    def _listening(self, is_speech: bool) -> None:
        """Called on every VAD frame of a participant utterance (a hook for listener behaviour)."""

    # audio out (the call's thread, every 20 ms)

    def send(self) -> np.ndarray | None:
        return self.replies.take()

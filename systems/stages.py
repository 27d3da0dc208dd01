"""The stages a dialogue system is composed of, one protocol each, and the embedded ones loaded.

A system takes the stages it needs: the cascade all four, the predictive system the same four
plus the turn-taking predictor (`judge.streaming`), a remote client none. A researcher's own
stage (another recogniser, a language model server) meets one of these protocols and nothing else.

    speech detection   P(speech) of each 32 ms frame      systems.speech_detection.StreamingVAD
    recognition        the words of an utterance          systems.recognition.WhisperASR
    language model     a reply streamed as text pieces    systems.language_models (ChatLLM's kinds)
    voice              speech of a sentence, 16 kHz       systems.voice.PiperTTS
    turn-taking        P(turn shift), P(short activity)   judge.streaming.StreamingJudge
"""

from __future__ import annotations

from typing import Callable, Iterator, NamedTuple, Protocol

import numpy as np

from systems.language_models import ChatLLM, Decoding
from systems.recognition import WhisperASR
from systems.speech_detection import load_vad_session
from systems.voice import PiperTTS


class SpeechDetector(Protocol):
    frame: int  # samples a probability covers

    def push(self, samples: np.ndarray) -> list[float]:
        """P(speech) of each whole frame the stream now holds."""


class Recogniser(Protocol):
    def transcribe(self, audio: np.ndarray, previous_text: str | None = None) -> str:
        """The words of a 16 kHz utterance; `previous_text` is read as the text before it."""


class LanguageModel(Protocol):
    def check(self) -> None:
        """Raise SystemError_ if the model cannot answer (a server unreachable, a model not served)."""

    def warm(self, messages: list[dict]) -> None:
        """Prepare for replies that begin with `messages` (a prompt cache)."""

    def stream(self, messages: list[dict], max_new_tokens: int, stop: Callable[[], bool],
               decoding: Decoding) -> Iterator[str]:
        """The reply to a chat, piece by piece, until it ends or `stop()` is true."""


class Voice(Protocol):
    def synthesize(self, text: str) -> Iterator[np.ndarray]:
        """16 kHz float32 speech of `text`, a piece (a sentence) at a time."""


class TurnTakingPredictor(Protocol):
    def push(self, speaker0: bool, speaker1: bool) -> np.ndarray:
        """One 20 ms frame of both channels' voice activity (the caller's, the system's)."""

    def prob(self, label: str) -> float:
        """The prediction `label` ("T": the caller's turn ends) at the latest frame."""

    def p_short_activity(self, speaker: int) -> float:
        """P(`speaker` makes a short contribution in the next 600 ms): a backchannel's hazard."""


class CascadeStages(NamedTuple):
    """The embedded cascade's stages, loaded once and shared by the calls that use the same models
    (the speech detector's ONNX session: each call runs its own `StreamingVAD` on it)."""

    vad_session: object
    recogniser: Recogniser
    language_model: LanguageModel
    voice: Voice


# What is loading, step by step, for a page that waits on it (studies.preparation).
LOAD_STEPS = (
    "the speech detector",
    "the speech recogniser",
    "the language model (converted once after installation: about a minute)",
    "the voice",
)


def load_stages(settings, on_step=None) -> CascadeStages:
    """The stages `settings` (a cascade's) name, loaded. `on_step(n, what)` is told before each
    of the LOAD_STEPS."""
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
    return CascadeStages(vad, asr, llm, PiperTTS(settings.tts_voice))

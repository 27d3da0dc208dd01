"""What the embedded systems share: the stages loaded once per process (or handed over), a speech
detector of their own, a reply worker on its own thread, and the caller's utterance as it grows.
A system on it decides when the caller's turn ends and what to do over its own speech; the reply
worker decides what to say (systems.reply_worker)."""

from __future__ import annotations

from typing import Callable

import numpy as np

from systems.base import DialogueSystem
from systems.events import EventKind
from systems.reply_worker import ReplyWorker
from systems.speech_detection import StreamingVAD
from systems.stages import CascadeStages, SpeechDetector, load_stages


class EmbeddedSystem(DialogueSystem):
    """A system composed of the embedded stages (`components`: stages already loaded, which calls
    share; else loaded here). `on_transcript(turn, text)` hears each turn's words on the reply
    worker's thread, before its reply is generated."""

    def __init__(self, config: dict, on_event=None, components=None, settings=None,
                 on_transcript: Callable[[int, str], None] | None = None):
        super().__init__(config, on_event, settings)
        s = self.settings
        self.stages = CascadeStages(*(components or load_stages(s)))
        self.vad: SpeechDetector = StreamingVAD(self.stages.vad_session, threshold=s.vad_threshold)
        self.replies = ReplyWorker(s, self.stages, self.emit, on_transcript)
        # the caller's side, in samples of mic audio received
        self._received = 0
        self._history_audio = np.zeros(0, dtype=np.float32)  # the last speech_pad_ms of audio
        self._utterance: list[np.ndarray] | None = None  # the blocks of the caller's utterance so far
        self._speech_samples = 0
        self._silence_samples = 0
        self._speculated = False  # its reply is being prepared

    @property
    def failure(self) -> str | None:
        return self.replies.failure

    @property
    def history(self) -> list[tuple[str, str]]:
        return self.replies.history

    def start(self, topic: str = "") -> None:
        super().start(topic)
        self.replies.start(topic)

    def close(self) -> None:
        self.replies.close()

    def _begin_utterance(self) -> None:
        self._utterance = [self._history_audio.copy()]
        self._speech_samples = self.vad.frame
        self._silence_samples = 0
        self._speculated = False
        self.emit(EventKind.SPEECH_START)

"""The embedded full-duplex baseline: the cascade extended to behave more like a listener.

- It listens while it speaks and yields when talked over (barge_in "yield").
- It backchannels ("mm-hm", "yeah", "right") in short pauses of a long participant turn,
  without taking the turn, from its own queue so a backchannel is never mistaken for a reply.
- Its turn-taking decisions use silence thresholds: a pause of `backchannel_pause_ms` in a turn
  that has run for `backchannel_after_s` since the last backchannel earns a backchannel;
  `min_silence_ms` of silence ends the turn. (The judge's turn-taking predictions can replace
  these thresholds once they are available to the call.)

Config: the cascade's keys plus backchannel_pause_ms, backchannel_after_s, backchannels.
"""

from __future__ import annotations

import itertools

import numpy as np

from studies.systems.base import BLOCK, SAMPLE_RATE, AudioQueue
from studies.systems.cascaded import CascadedSystem

DEFAULTS = {"barge_in": "yield", "min_silence_ms": 400.0}
OWN_KEYS = {"backchannel_pause_ms": 160.0, "backchannel_after_s": 2.5, "backchannels": ["mm-hm.", "yeah.", "right."]}


class FullDuplexBaseline(CascadedSystem):
    def __init__(self, config: dict, on_event=None, components=None):
        own = {key: config.get(key, default) for key, default in OWN_KEYS.items()}
        cascade = {**DEFAULTS, **{k: v for k, v in config.items() if k not in OWN_KEYS}}
        super().__init__(cascade, on_event, components)
        self.config = config
        self.pause_samples = own["backchannel_pause_ms"] * SAMPLE_RATE / 1000
        self.after_samples = own["backchannel_after_s"] * SAMPLE_RATE
        self.backchannel_out = AudioQueue()
        # Synthesized once per call: a backchannel must come at once, not after TTS.
        clips = [np.concatenate(list(self.tts.synthesize(text))) for text in own["backchannels"]]
        self._clips = itertools.cycle(clips)
        self._texts = itertools.cycle(own["backchannels"])
        self._since_backchannel = 0
        self._pause = 0

    def _begin_utterance(self) -> None:
        super()._begin_utterance()
        self._since_backchannel = 0
        self._pause = 0

    def _listening(self, is_speech: bool) -> None:
        frame = self.vad.frame
        self._since_backchannel += frame
        self._pause = 0 if is_speech else self._pause + frame
        if (self._pause >= self.pause_samples and self._since_backchannel >= self.after_samples
                and not len(self.out) and not len(self.backchannel_out)):
            self.backchannel_out.put(next(self._clips))
            self.emit("backchannel", text=next(self._texts))
            self._since_backchannel = 0

    def send(self) -> np.ndarray | None:
        block = super().send()
        if block is None:
            block = self.backchannel_out.take(BLOCK)
        return block

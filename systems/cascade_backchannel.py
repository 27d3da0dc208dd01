"""The embedded cascade with timers (kind `cascade-backchannel`; `full-duplex-baseline` and
`full-duplex` are its former names). It predicts nothing: fixed thresholds stand where a
turn-taking prediction would.

- It keeps listening while it speaks and yields when talked over (barge_in "yield"): any sound
  over its speech stops it, a backchannel or a cough as much as an interruption.
- It plays pre-synthesised backchannel clips ("uh huh", "yeah", "right", in turn) on a pause timer:
  a pause of `backchannel_pause_ms` in a turn that has run for `backchannel_after_s` since the last
  backchannel earns one, from its own queue so a backchannel is never mistaken for a reply.
- It ends the caller's turn after a fixed silence, `min_silence_ms` (400 ms; the cascade's 250 ms).

Settings: CascadeBackchannelSettings, the cascade's with its own defaults and the backchannel keys.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace
from typing import Self

import numpy as np

from systems.base import BLOCK, SAMPLE_RATE, AudioQueue
from systems.cascaded import CascadedSettings, CascadedSystem
from systems.events import EventKind


@dataclass(frozen=True)
class CascadeBackchannelSettings(CascadedSettings):
    """The `cascade-backchannel` kind's settings: every cascade setting, two of them with other
    defaults (a listener yields and waits a little longer before answering), and the backchannels.
    How each value was chosen: docs/dialogue-systems.md#cascade-backchannel."""

    min_silence_ms: float = 400.0  # ms of silence that end the caller's turn (the cascade's: 250)
    barge_in: str = "yield"  # stop when talked over (the cascade's: "ignore")
    backchannel_pause_ms: float = 160.0  # ms: a pause this long in a long enough turn earns a backchannel
    backchannel_after_s: float = 2.5  # s of the turn since the last backchannel that is long enough
    backchannels: tuple[str, ...] = ("uh huh.", "yeah.", "right.")  # said in turn, as the Piper voice says them

    @classmethod
    def from_config(cls, config: dict) -> Self:
        settings = super().from_config(config)
        return replace(settings, backchannels=tuple(settings.backchannels))  # a study file writes a list


class CascadeBackchannel(CascadedSystem):
    settings_class = CascadeBackchannelSettings

    def __init__(self, config: dict, on_event=None, components=None, settings=None):
        super().__init__(config, on_event, components, settings)
        s = self.settings
        self.pause_samples = s.backchannel_pause_ms * SAMPLE_RATE / 1000
        self.after_samples = s.backchannel_after_s * SAMPLE_RATE
        self.backchannel_out = AudioQueue()
        # Synthesized once per call: a backchannel must come at once, not after TTS.
        clips = [np.concatenate(list(self.stages.voice.synthesize(text))) for text in s.backchannels]
        self._clips = itertools.cycle(clips)
        self._texts = itertools.cycle(s.backchannels)
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
                and not len(self.replies.out) and not len(self.backchannel_out)):
            self.backchannel_out.put(next(self._clips))
            self.emit(EventKind.BACKCHANNEL, text=next(self._texts))
            self._since_backchannel = 0

    def send(self) -> np.ndarray | None:
        block = super().send()
        if block is None:
            block = self.backchannel_out.take(BLOCK)
        return block

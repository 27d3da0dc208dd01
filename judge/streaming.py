"""The judge frame by frame, for a live call: the same causal model as `judge.model.predict`,
fed one 20 ms frame of two-speaker voice activity at a time.

After frame t has been pushed, `label_probs` is the distribution of the Talking Turns label of the
chunk that starts at the next frame (C, BC, T, I, NA), read from the GRU state after frames <= t
exactly as the offline pass reads it; at chunk boundaries (t odd) the two are equal.

Only the voice-activity judge streams: it needs no audio, so a dialogue system can run it on the
participant's VAD decisions and its own output at ~0.1 ms a frame.
"""

from __future__ import annotations

import numpy as np
import torch

from judge.features import FRAME_RATE, MAX_SINCE_S, va_features
from judge.labels import LABELS
from judge.model import JudgeModel
from judge.targets import N_BINS, N_CLASSES

# Each future-activity class's bins: FUTURE_BITS[c, k, b] = speaker k active in bin b (judge.targets' order).
FUTURE_BITS = ((np.arange(N_CLASSES)[:, None] >> np.arange(2 * N_BINS)) & 1).reshape(N_CLASSES, 2, N_BINS).astype(bool)

# va_features looks back at most MAX_SINCE_S: a window one frame longer gives the same values.
HISTORY_FRAMES = int(MAX_SINCE_S * FRAME_RATE) + 2


class StreamingJudge:
    def __init__(self, model: JudgeModel):
        if model.config.inputs != "va":
            raise ValueError(f"only the voice-activity judge streams, not the {model.config.inputs!r} one")
        self.model = model.eval()
        self.frame_s = 1.0 / FRAME_RATE
        self._history = np.zeros((2, 0), dtype=np.float32)
        self._frames = 0
        self._state: torch.Tensor | None = None
        self.label_probs = self._probs(None)  # before any frame: the context-free prediction

    def _probs(self, state: torch.Tensor | None) -> np.ndarray:
        with torch.no_grad():
            h = state[-1, 0] if state is not None else torch.zeros(self.model.config.hidden_size)
            return torch.softmax(self.model.label_head(h), dim=-1).numpy()

    def push(self, speaker0: bool, speaker1: bool) -> np.ndarray:
        """Add one frame of voice activity; returns the next chunk's label distribution."""
        frame = np.array([[float(speaker0)], [float(speaker1)]], dtype=np.float32)
        self._history = np.concatenate([self._history, frame], axis=1)[:, -HISTORY_FRAMES:]
        # Features of the new frame: its index in the window stands for the true frame index.
        # While the window still holds the whole call the two are the same frame; later, every
        # look-back is capped at MAX_SINCE_S, which the window covers.
        features = va_features(self._history)[-1]
        with torch.no_grad():
            x = self.model.input_proj(torch.from_numpy(features)[None, None])
            _, self._state = self.model.gru(x, self._state)
        self._frames += 1
        self.label_probs = self._probs(self._state)
        return self.label_probs

    def future_activity(self) -> np.ndarray:
        """(256,) probabilities of the two speakers' activity in the next 2 s (judge.targets' classes),
        from the state after the last frame pushed."""
        if self._state is None:
            raise ValueError("no frame pushed yet")
        with torch.no_grad():
            return torch.softmax(self.model.va_head(self._state[-1, 0]), dim=-1).numpy()

    def p_short_activity(self, speaker: int) -> float:
        """P(`speaker` is active within the next 600 ms and silent 0.6-2 s from now): a short
        contribution such as a backchannel (VAP's backchannel prediction), from the future-activity head."""
        bits = FUTURE_BITS[:, speaker]
        short = (bits[:, 0] | bits[:, 1]) & ~bits[:, 2] & ~bits[:, 3]
        return float(self.future_activity()[short].sum())

    @property
    def frames(self) -> int:
        return self._frames

    def prob(self, label: str) -> float:
        return float(self.label_probs[LABELS.index(label)])

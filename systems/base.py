"""The one interface every dialogue system implements: audio frames in, audio frames out, events.

The call (browser or simulated) drives a system in real time, once per 20 ms block:

    system.receive(mic_block)      # 320 samples of the participant, 16 kHz float32
    block = system.send()          # 320 samples to play, or None for silence

Heavy work (recognition, generation, synthesis) runs on the system's own threads; `receive`
and `send` return at once. Systems report what they decide as events (`on_event`), which the
call stamps with the mic-clock position and writes to the timing log (every kind of event:
systems/events.py).
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Callable, ClassVar

import numpy as np

from systems.events import EventKind, SystemEvent

SAMPLE_RATE = 16000
BLOCK = 320  # 20 ms


class SystemError_(RuntimeError):
    """A dialogue system that cannot be built or reached; the message says which and why."""


class AudioQueue:
    """Thread-safe FIFO of output samples, taken out one block at a time."""

    def __init__(self):
        self._chunks: deque[np.ndarray] = deque()
        self._lock = threading.Lock()
        self._size = 0

    def put(self, samples: np.ndarray) -> None:
        samples = np.asarray(samples, dtype=np.float32)
        if len(samples):
            with self._lock:
                self._chunks.append(samples)
                self._size += len(samples)

    def take(self, n: int = BLOCK) -> np.ndarray | None:
        """The next n samples (zero-padded at the end of the audio), or None when empty."""
        with self._lock:
            if not self._size:
                return None
            out = np.zeros(n, dtype=np.float32)
            filled = 0
            while filled < n and self._chunks:
                chunk = self._chunks[0]
                k = min(n - filled, len(chunk))
                out[filled:filled + k] = chunk[:k]
                filled += k
                if k == len(chunk):
                    self._chunks.popleft()
                else:
                    self._chunks[0] = chunk[k:]
            self._size -= filled
            return out

    def skip_quiet(self, level: float, keep: int, most: int) -> int:
        """Drop the leading samples no louder than `level`, but the last `keep` of them before the
        next louder one, and at most `most`; returns how many were dropped."""
        with self._lock:
            quiet = 0
            for chunk in self._chunks:
                loud = np.flatnonzero(np.abs(chunk) > level)
                if len(loud):
                    quiet += int(loud[0])
                    break
                quiet += len(chunk)
            drop = min(max(quiet - keep, 0), most)
            left = drop
            while left:
                chunk = self._chunks[0]
                if len(chunk) <= left:
                    self._chunks.popleft()
                    left -= len(chunk)
                else:
                    self._chunks[0] = chunk[left:]
                    left = 0
            self._size -= drop
            return drop

    def clear(self) -> int:
        with self._lock:
            dropped, self._size = self._size, 0
            self._chunks.clear()
            return dropped

    def __len__(self) -> int:
        return self._size


class DialogueSystem:
    """Base class: subclasses name their settings dataclass and implement `receive` and `send`
    (and `start`/`close` if needed)."""

    sample_rate = SAMPLE_RATE
    block = BLOCK
    settings_class: ClassVar[type]  # the kind's settings (systems.settings); `config` is parsed into it
    # Why the call cannot go on (a remote system's server died or said an error), set by the
    # system's own threads; the call ends as failed with it. None while all is well.
    failure: str | None = None

    def __init__(self, config: dict, on_event: Callable[[SystemEvent], None] | None = None, settings=None):
        self.config = config  # as the study file wrote it
        # `settings`: the config already parsed (systems.kinds.SystemSpec), else parsed here
        self.settings = settings if settings is not None else self.settings_class.from_config(config)
        self.on_event = on_event
        self.topic = ""

    def start(self, topic: str = "") -> None:
        self.topic = topic

    def receive(self, block: np.ndarray) -> None:
        raise NotImplementedError

    def send(self) -> np.ndarray | None:
        raise NotImplementedError

    def close(self) -> None:
        pass

    def emit(self, kind: EventKind, **fields) -> None:
        if self.on_event is not None:
            self.on_event(SystemEvent(kind, fields))

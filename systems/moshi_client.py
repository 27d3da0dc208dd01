"""Client for a Moshi server (kyutai-labs/moshi, `/api/chat`): its binary WebSocket protocol.

Every message starts with one byte saying its kind: 0 handshake (the server's first message),
1 audio (Ogg/Opus, 24 kHz mono, written in 80 ms frames of 1,920 samples), 2 UTF-8 text,
3 control, 4 metadata, 5 error, 6 ping. Moshi is full duplex: audio flows both ways all the
time, the model decides when to speak: Kyutai's server (`moshi.server`) answers every 80 ms frame of
input with an audio frame (and maybe a text piece), from the first frame on. It serves one
conversation at a time behind a lock, sending the handshake only when the conversation starts:
a busy server keeps a new connection waiting, which the client counts as refusing after
`handshake_timeout_s` (systems.streaming) and tries the next url.
Settings: MoshiSettings (url, e.g. ws://localhost:8998/api/chat).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from systems.base import SystemError_
from systems.events import EventKind
from systems.streaming import ServerSettings, WebSocketSystem

HANDSHAKE, AUDIO, TEXT, CONTROL, METADATA, ERROR, PING = range(7)
FRAME = 1920  # 80 ms at 24 kHz


@dataclass(frozen=True)
class MoshiSettings(ServerSettings):
    """The `moshi` kind's settings: the server's address (`url`), nothing else.
    What each means: docs/dialogue-systems.md#moshi."""


class MoshiClient(WebSocketSystem):
    settings_class = MoshiSettings
    remote_rate = 24000

    def __init__(self, config: dict, on_event=None, settings=None):
        super().__init__(config, on_event, settings)
        import sphn

        self._writer = sphn.OpusStreamWriter(self.remote_rate)
        self._reader = sphn.OpusStreamReader(self.remote_rate)
        self._pending = np.zeros(0, dtype=np.float32)
        self.text = ""

    async def _handshake(self, ws) -> None:
        first = await ws.recv()
        if not isinstance(first, bytes) or not first or first[0] != HANDSHAKE:
            raise SystemError_(f"{self.url}: expected the Moshi handshake (kind 0), got {first[:8]!r}")

    def _encode(self, samples: np.ndarray) -> list:
        self._pending = np.concatenate([self._pending, samples])
        messages = []
        while len(self._pending) >= FRAME:
            frame, self._pending = self._pending[:FRAME], self._pending[FRAME:]
            ogg = self._writer.append_pcm(frame)
            if ogg:
                messages.append(bytes([AUDIO]) + ogg)
        return messages

    def _handle(self, message) -> None:  # Moshi's messages need no answer
        if not isinstance(message, bytes) or not message:
            return
        kind, payload = message[0], message[1:]
        if kind == AUDIO:
            pcm = self._reader.append_bytes(payload)
            if pcm is not None and len(pcm):
                self.play(pcm)
        elif kind == TEXT:
            piece = payload.decode("utf-8", errors="replace")
            self.text += piece
            self.emit(EventKind.TEXT, text=piece)
        elif kind == ERROR:  # the server's own error: the conversation cannot go on
            self.fail(f"{self.url}: the server said: {payload.decode('utf-8', errors='replace')}")

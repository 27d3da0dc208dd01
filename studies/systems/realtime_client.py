"""Client for OpenAI-Realtime-compatible servers (OpenAI, huggingface/speech-to-speech's
realtime server, ...): JSON events over a WebSocket, audio as base64 PCM16 at 24 kHz.

The server's voice activity detection decides turns ("server_vad"); when it hears the
participant start speaking it says `input_audio_buffer.speech_started`, and we drop the reply
audio still queued (barge-in). Both the beta (`response.audio.delta`) and GA
(`response.output_audio.delta`) event names are understood.

Settings: RealtimeSettings (url, api_key, instructions, voice).
"""

from __future__ import annotations

import asyncio
import base64
import json
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit
from urllib.request import ProxyHandler, build_opener

import numpy as np

from studies.systems.base import SAMPLE_RATE, SystemError_
from studies.systems.streaming import ServerSettings, WebSocketSystem

AUDIO_DELTAS = ("response.audio.delta", "response.output_audio.delta")
TRANSCRIPT_DELTAS = ("response.audio_transcript.delta", "response.output_audio_transcript.delta")


STATUS_TIMEOUT_S = 0.5


def _status_of(url: str) -> dict | None:
    """GET /status of a realtime server at its WebSocket address, or None."""
    parts = urlsplit(url)
    address = urlunsplit(("https" if parts.scheme == "wss" else "http", parts.netloc, "/status", "", ""))
    try:  # no proxy: the servers are the study's own machines
        with build_opener(ProxyHandler({})).open(address, timeout=STATUS_TIMEOUT_S) as answer:
            status = json.loads(answer.read(4096))
    except (OSError, ValueError):
        return None
    calls, most = status.get("calls"), status.get("max_calls")
    if not isinstance(calls, int) or not (most is None or isinstance(most, int)):
        return None
    return {"calls": calls, "max_calls": most}


@dataclass(frozen=True)
class RealtimeSettings(ServerSettings):
    """The `realtime` kind's settings; `url` is ws://host/v1/realtime?model=... or a list of servers."""

    api_key: str | None = None  # sent as a Bearer token
    instructions: str | None = None  # the session's instructions; `{topic}` is filled in
    voice: str | None = None  # the server's voice name


class RealtimeClient(WebSocketSystem):
    settings_class = RealtimeSettings
    remote_rate = 24000

    def _headers(self) -> dict:
        key = self.config.get("api_key")
        return {"Authorization": f"Bearer {key}"} if key else {}

    async def _server_status(self) -> dict[str, dict]:
        """The calls each server has open, from all app processes, where the server says
        (`python -m studies serve-realtime` answers GET /status on its port); asked at once,
        STATUS_TIMEOUT_S each, servers that do not answer are left out."""
        answers = await asyncio.gather(*(asyncio.to_thread(_status_of, url) for url in self.urls))
        return {url: status for url, status in zip(self.urls, answers) if status is not None}

    async def _handshake(self, ws) -> None:
        first = json.loads(await ws.recv())
        if first.get("type") != "session.created":
            raise SystemError_(f"{self.url}: expected session.created, got {first.get('type')!r}")
        session = {
            "modalities": ["audio", "text"],
            "input_audio_format": "pcm16",
            "output_audio_format": "pcm16",
            "turn_detection": {"type": "server_vad"},
        }
        if self.settings.instructions:
            session["instructions"] = self.settings.instructions.format(topic=self.topic or "anything")
        if self.settings.voice:
            session["voice"] = self.settings.voice
        await ws.send(json.dumps({"type": "session.update", "session": session}))

    def _encode(self, samples: np.ndarray) -> list:
        pcm = (np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes()
        return [json.dumps({"type": "input_audio_buffer.append", "audio": base64.b64encode(pcm).decode()})]

    def _handle(self, message) -> None:
        event = json.loads(message)
        kind = event.get("type", "")
        if kind in AUDIO_DELTAS:
            pcm = np.frombuffer(base64.b64decode(event["delta"]), dtype="<i2").astype(np.float32) / 32768.0
            self.play(pcm)
        elif kind == "input_audio_buffer.speech_started":
            dropped = self.out.clear()
            self.emit("speech_start", dropped_s=round(dropped / SAMPLE_RATE, 3))
        elif kind == "input_audio_buffer.speech_stopped":
            self.emit("turn_end")
        elif kind in TRANSCRIPT_DELTAS:
            self.emit("text", text=event.get("delta", ""))
        elif kind == "conversation.item.input_audio_transcription.completed":
            self.emit("transcript", text=event.get("transcript", ""))
        elif kind == "response.done":
            status = (event.get("response") or {}).get("status")  # "cancelled" when cut off
            self.emit("reply", **({"status": status} if status else {}))
        elif kind == "error":
            self.emit("error", message=json.dumps(event.get("error", event))[:300])

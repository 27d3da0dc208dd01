"""Client for OpenAI-Realtime-compatible servers (OpenAI, huggingface/speech-to-speech's
realtime server, ...): JSON events over a WebSocket, audio as base64 PCM16 at 24 kHz.

The server's voice activity detection decides turns ("server_vad"); when it hears the
participant start speaking it says `input_audio_buffer.speech_started`, and we drop the reply
audio still queued (barge-in). Both the beta (`response.audio.delta`) and GA
(`response.output_audio.delta`) event names are understood.

Settings: RealtimeSettings. url (ws://host/v1/realtime?model=..., or a list), api_key_env (the
name of an environment variable holding the key) or api_key_file (a file holding it), optional:
read at each connection and sent as `Authorization: Bearer KEY`, also to GET /status; a literal
api_key is refused (study configs are stored and exported: studies/realtime_keys.py).
instructions (optional; `{topic}` is filled in), voice (optional).
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
from dataclasses import dataclass
from typing import Self
from urllib.parse import urlsplit, urlunsplit
from urllib.request import ProxyHandler, Request, build_opener

import numpy as np

from studies.realtime_keys import ApiKeyError, client_key, key_reference_problem
from studies.systems.base import SAMPLE_RATE, SystemError_
from studies.systems.streaming import ServerSettings, WebSocketSystem

AUDIO_DELTAS = ("response.audio.delta", "response.output_audio.delta")
TRANSCRIPT_DELTAS = ("response.audio_transcript.delta", "response.output_audio_transcript.delta")


STATUS_TIMEOUT_S = 0.5


def _status_of(url: str, headers: dict) -> dict | None:
    """GET /status of a realtime server at its WebSocket address (with the call's `headers`: a
    keyed server answers only its key), or None."""
    parts = urlsplit(url)
    address = urlunsplit(("https" if parts.scheme == "wss" else "http", parts.netloc, "/status", "", ""))
    try:  # no proxy: the servers are the study's own machines
        request = Request(address, headers=headers)
        with build_opener(ProxyHandler({})).open(request, timeout=STATUS_TIMEOUT_S) as answer:
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

    api_key_env: str | None = None  # the environment variable holding the key (sent as a Bearer token)
    api_key_file: str | None = None  # or the file holding it; both read at each connection

    @classmethod
    def from_config(cls, config: dict) -> Self:
        problem = key_reference_problem(config)  # a literal key: refused with what to write instead
        if problem:
            raise SystemError_(f"the config {problem}")
        return super().from_config(config)
    instructions: str | None = None  # the session's instructions; `{topic}` is filled in
    voice: str | None = None  # the server's voice name


class RealtimeClient(WebSocketSystem):
    settings_class = RealtimeSettings
    remote_rate = 24000

    def __init__(self, config: dict, on_event=None):
        problem = key_reference_problem(config)
        if problem:
            raise SystemError_(f"RealtimeClient: the config {problem}")
        super().__init__(config, on_event)

    def _headers(self) -> dict:
        """The key, read now (a changed file or variable holds from the next call); a key that
        cannot be had fails the call with the reason."""
        try:
            key = client_key(self.config, os.environ)
        except ApiKeyError as e:
            raise SystemError_(f"cannot send the API key: {e}") from None
        return {"Authorization": f"Bearer {key}"} if key else {}

    async def _server_status(self) -> dict[str, dict]:
        """The calls each server has open, from all app processes, where the server says
        (`python -m studies serve-realtime` answers GET /status on its port); asked at once,
        STATUS_TIMEOUT_S each, servers that do not answer are left out."""
        headers = self._headers()
        answers = await asyncio.gather(*(asyncio.to_thread(_status_of, url, headers) for url in self.urls))
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

"""Client for OpenAI-Realtime-compatible servers (OpenAI, huggingface/speech-to-speech's
realtime server, `python -m studies serve-realtime`, ...): JSON events over a WebSocket, audio as
base64 PCM16 at 24 kHz.

Two dialects of the protocol, chosen by the `dialect` setting:
- "ga" (the default): OpenAI's current Realtime API. `session.update` carries `session.type:
  "realtime"`, `output_modalities` and the formats under `audio.input` / `audio.output`
  (`{"type": "audio/pcm", "rate": 24000}`); the server answers `response.output_audio.delta`.
- "beta": the earlier shape (`modalities`, `input_audio_format: "pcm16"`), sent with the
  `OpenAI-Beta: realtime=v1` header it needs; the server answers `response.audio.delta`.
The event shapes are those of the `openai` package's types (`openai.types.realtime`, and
`openai.types.beta.realtime` for beta), which the tests validate every event against.

The server's voice activity detection decides turns ("server_vad"). After `session.update` the
client waits for `session.updated`: a server that refuses the session (an `error`) fails the call
with its message before it starts, rather than losing the prompt. When the server hears the
participant start speaking (`input_audio_buffer.speech_started`) the reply audio still queued is
dropped (barge-in) and the server is told what was heard of that reply:
`conversation.item.truncate` with `audio_end_ms`, the reply's audio played so far, so its
conversation holds only what the participant heard. An `error` during the call fails it with the
server's message (systems.streaming: the call ends as failed, the recording kept).

Settings: RealtimeSettings. url (ws://host/v1/realtime?model=..., or a list), api_key_env (the
name of an environment variable holding the key) or api_key_file (a file holding it), optional:
read at each connection and sent as `Authorization: Bearer KEY`, also to GET /status; a literal
api_key is refused (study configs are stored and exported: systems/api_keys.py).
instructions (optional; `{topic}` is filled in), voice (optional), dialect ("ga" or "beta").
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

from systems.api_keys import ApiKeyError, client_key, key_reference_problem
from systems.base import SAMPLE_RATE, SystemError_
from systems.events import EventKind
from systems.streaming import ServerSettings, WebSocketSystem

AUDIO_DELTAS = ("response.audio.delta", "response.output_audio.delta")
TRANSCRIPT_DELTAS = ("response.audio_transcript.delta", "response.output_audio_transcript.delta")


STATUS_TIMEOUT_S = 0.5
DIALECTS = ("ga", "beta")
PCM = {"type": "audio/pcm", "rate": 24000}  # the GA name of 24 kHz PCM16


def session_config(settings, instructions: str | None) -> dict:
    """The `session` of the client's `session.update`, in the settings' dialect."""
    if settings.dialect == "beta":
        session = {"modalities": ["audio", "text"], "input_audio_format": "pcm16", "output_audio_format": "pcm16",
                   "turn_detection": {"type": "server_vad"}}
        if settings.voice:
            session["voice"] = settings.voice
    else:
        output = {"format": PCM, **({"voice": settings.voice} if settings.voice else {})}
        session = {"type": "realtime", "output_modalities": ["audio"],
                   "audio": {"input": {"format": PCM, "turn_detection": {"type": "server_vad"}}, "output": output}}
    if instructions:
        session["instructions"] = instructions
    return session


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


def free_calls(config: dict) -> int | None:
    """How many more calls the system's servers take, by their own GET /status: the sum of
    max_calls - calls over its servers (calls from every app process). None where a server does
    not say (no /status, or no max_calls): it takes as many as come, and nobody waits for it."""
    settings = RealtimeSettings.from_config(config)
    try:
        key = client_key(config, os.environ)
    except ApiKeyError:
        return None  # the call itself fails with the reason
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    total = 0
    for url in settings.urls:
        status = _status_of(url, headers)
        if status is None or status["max_calls"] is None:
            return None
        total += max(0, status["max_calls"] - status["calls"])
    return total


@dataclass(frozen=True)
class RealtimeSettings(ServerSettings):
    """The `realtime` kind's settings; `url` is ws://host/v1/realtime?model=... or a list of servers.
    What each means: docs/dialogue-systems.md#realtime."""

    api_key_env: str | None = None  # the environment variable holding the key (sent as a Bearer token)
    api_key_file: str | None = None  # or the file holding it; both read at each connection

    @classmethod
    def from_config(cls, config: dict) -> Self:
        problem = key_reference_problem(config)  # a literal key: refused with what to write instead
        if problem:
            raise SystemError_(f"the config {problem}")
        settings = super().from_config(config)
        if settings.dialect not in DIALECTS:
            raise SystemError_(f"config 'dialect' must be one of {', '.join(DIALECTS)}, got {settings.dialect!r}")
        return settings
    instructions: str | None = None  # the session's instructions; `{topic}` is filled in
    voice: str | None = None  # the server's voice name
    dialect: str = "ga"  # "ga": OpenAI's current Realtime API; "beta": its earlier shape (and header)


class RealtimeClient(WebSocketSystem):
    settings_class = RealtimeSettings
    remote_rate = 24000

    def __init__(self, config: dict, on_event=None, settings=None):
        problem = key_reference_problem(config)
        if problem:
            raise SystemError_(f"RealtimeClient: the config {problem}")
        super().__init__(config, on_event, settings)
        self._reply_item: str | None = None  # the reply whose audio is queued or playing
        self._reply_samples = 0  # its audio queued so far (16 kHz samples)

    def _headers(self) -> dict:
        """The key, read now (a changed file or variable holds from the next call); a key that
        cannot be had fails the call with the reason."""
        try:
            key = client_key(self.config, os.environ)
        except ApiKeyError as e:
            raise SystemError_(f"cannot send the API key: {e}") from None
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        if self.settings.dialect == "beta":
            headers["OpenAI-Beta"] = "realtime=v1"
        return headers

    async def _server_status(self) -> dict[str, dict]:
        """The calls each server has open, from all app processes, where the server says
        (`python -m studies serve-realtime` answers GET /status on its port); asked at once,
        STATUS_TIMEOUT_S each, servers that do not answer are left out."""
        headers = self._headers()
        answers = await asyncio.gather(*(asyncio.to_thread(_status_of, url, headers) for url in self.urls))
        return {url: status for url, status in zip(self.urls, answers) if status is not None}

    handshake_timeout_s = 10.0  # session.update builds the served system (the cascade's, on its models)

    async def _handshake(self, ws) -> None:
        """session.created, then our session.update, answered by session.updated (or an error:
        the call fails with the server's message)."""
        first = json.loads(await ws.recv())
        if first.get("type") != "session.created":
            raise SystemError_(f"{self.url}: expected session.created, got {first.get('type')!r}")
        instructions = self.settings.instructions
        if instructions:
            instructions = instructions.format(topic=self.topic or "anything")
        await ws.send(json.dumps({"type": "session.update", "session": session_config(self.settings, instructions)}))
        while True:
            event = json.loads(await ws.recv())
            if event.get("type") == "session.updated":
                return
            if event.get("type") == "error":
                raise SystemError_(f"{self.url}: the server refused the session: {_error_message(event)}")

    def _encode(self, samples: np.ndarray) -> list:
        pcm = (np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes()
        return [json.dumps({"type": "input_audio_buffer.append", "audio": base64.b64encode(pcm).decode()})]

    def _handle(self, message) -> list:
        event = json.loads(message)
        kind = event.get("type", "")
        if kind in AUDIO_DELTAS:
            pcm = np.frombuffer(base64.b64decode(event["delta"]), dtype="<i2").astype(np.float32) / 32768.0
            item = event.get("item_id")
            if item != self._reply_item:
                self._reply_item, self._reply_samples = item, 0
            self._reply_samples += self.play(pcm)
        elif kind == "input_audio_buffer.speech_started":
            dropped = self.out.clear()
            self.emit(EventKind.SPEECH_START, dropped_s=round(dropped / SAMPLE_RATE, 3))
            return self._truncate(dropped)
        elif kind == "input_audio_buffer.speech_stopped":
            self.emit(EventKind.TURN_END)
        elif kind in TRANSCRIPT_DELTAS:
            self.emit(EventKind.TEXT, text=event.get("delta", ""))
        elif kind == "conversation.item.input_audio_transcription.completed":
            self.emit(EventKind.TRANSCRIPT, text=event.get("transcript", ""))
        elif kind == "response.done":
            status = (event.get("response") or {}).get("status")  # "cancelled" when cut off
            self.emit(EventKind.REPLY, **({"status": status} if status else {}))
        elif kind == "error":
            self.fail(f"{self.url}: the server said: {_error_message(event)}")
        return []

    def _truncate(self, dropped: int) -> list:
        """`conversation.item.truncate` for the reply cut by a barge-in: the server keeps only the
        audio that was played (what the participant heard), not what was generated."""
        if not dropped or self._reply_item is None:
            return []
        played_ms = max(0, (self._reply_samples - dropped) * 1000 // SAMPLE_RATE)
        truncate = {"type": "conversation.item.truncate", "item_id": self._reply_item, "content_index": 0,
                    "audio_end_ms": played_ms}
        self.emit(EventKind.TRUNCATED, item_id=self._reply_item, audio_end_ms=played_ms)
        self._reply_item, self._reply_samples = None, 0
        return [json.dumps(truncate)]


def _error_message(event: dict) -> str:
    """The server's words from an `error` event (its `error.message`), cut to a line's length."""
    error = event.get("error")
    message = error.get("message") if isinstance(error, dict) else None
    return str(message if message else json.dumps(error if error is not None else event))[:300]

"""The embedded cascade (or the cascade with timers, `cascade-backchannel`) as its own server
process, speaking the OpenAI-Realtime protocol subset that the app's `realtime` system kind speaks
(systems/realtime_client.py), so calls can run on other machines:

    python -m studies serve-realtime --system cascaded --host 0.0.0.0 --port 8765 --api-key-file realtime.key
    # a study's system: {name: cascade, kind: realtime,
    #                    config: {url: "ws://box:8765/v1/realtime", api_key_env: BOX_KEY}}

With a key (`--api-key-file` or TURNTAKING_REALTIME_API_KEY; required off loopback), every
request, the WebSocket upgrade and GET /status alike, must carry `Authorization: Bearer KEY`:
without it the answer is 401 before any model work, and after MAX_PER_CLIENT failures from one
address within WINDOW_S (the researcher login's throttle, webguard.login_throttle) 429, even with
the right key, until the oldest failure leaves the window. No limit per server: with no user
names, one would let anyone lock the study's app out. The address of a request relayed from
loopback (a TLS front on this machine) is its X-Forwarded-For.

The models are loaded once per process, before the port opens, and shared by every connection
(as the app's in-process calls share them). Each WebSocket connection is one call with its own
system instance, driven in real time:

The events are OpenAI's GA Realtime shapes (`openai.types.realtime`; its tests validate every
event against those types):

- in: `input_audio_buffer.append` (base64 PCM16, 24 kHz) is resampled to 16 kHz and given to
  `receive()` in 20 ms blocks as it arrives;
- out: a 20 ms wall-clock tick calls `send()` (as the app's WebRTC track does) and streams each
  block, resampled to 24 kHz, as `response.output_audio.delta` of the response being spoken.
  Turn-taking stays with the system (server VAD), so its barge-in policy holds; the client holds
  only the blocks in flight.
- events: speech_start / turn_end -> `input_audio_buffer.speech_started` / `speech_stopped` /
  `committed` (one item id per turn); transcript ->
  `conversation.item.input_audio_transcription.completed`; the reply -> `response.created`,
  `response.output_audio_transcript.delta` / `.done`, `response.done` (status "completed" once
  its audio has played, "cancelled" when the system yields); audio the system speaks outside a
  reply (a backchannel) is a response of its own; errors -> `error`.

`session.update` takes the GA session (`type: "realtime"`) and may set `instructions` (the system
prompt of this call); formats other than audio/pcm at 24 kHz, output other than audio and turn
detection other than server_vad are refused with an `error` event, as is the beta shape.
`conversation.item.truncate` (a client's barge-in) is acknowledged with
`conversation.item.truncated`: the system has yielded already. A bad message gets an `error`
event and the call goes on; a closed connection frees its system.
`GET /status` answers {"system", "calls", "max_calls", "late_blocks", "served"}; with `max_calls` set,
further connections are refused with HTTP 503 (a client with several urls tries the next).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import itertools
import json
import logging
import time
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from http import HTTPStatus

import numpy as np
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed

from systems.api_keys import bearer_matches, is_loopback
from systems import SystemError_, SystemEvent, make_system
from systems.base import BLOCK, SAMPLE_RATE
from systems.stages import load_stages
from systems.events import EventKind
from systems.kinds import SERVABLE_KIND_NAMES, system_kind
from systems.streaming import StreamResampler
from webguard.login_throttle import (
    MAX_PER_CLIENT,
    WINDOW_S,
    FailureStore,
    RecentFailures,
    ThrottleLimits,
    retry_after,
)

log = logging.getLogger(__name__)
PROTOCOL_RATE = 24000  # OpenAI Realtime's pcm16
MAX_APPEND_S = 10.0  # one append longer than this is refused (a client streams 20-100 ms at a time)
TICK_S = BLOCK / SAMPLE_RATE
PCM = {"type": "audio/pcm", "rate": PROTOCOL_RATE}  # the GA name of the one audio format served


def session_problem(session) -> str | None:
    """What in a client's `session.update` session this server cannot serve, or None. It speaks
    OpenAI's GA shape: `type: "realtime"`, formats under `audio.input` / `audio.output`."""
    if not isinstance(session, dict):
        return "session.update needs a 'session' object"
    if session.get("type") != "realtime":
        return ("session.type must be 'realtime': this server speaks the GA Realtime API "
                "(formats under audio.input / audio.output, not the beta input_audio_format)")
    audio = session.get("audio", {})
    if not isinstance(audio, dict) or not all(isinstance(audio.get(side, {}), dict) for side in ("input", "output")):
        return "session.audio must be an object with 'input' and 'output' objects"
    for side in ("input", "output"):
        audio_format = audio.get(side, {}).get("format", PCM)
        if not isinstance(audio_format, dict) or audio_format.get("type") != "audio/pcm" \
                or audio_format.get("rate", PROTOCOL_RATE) != PROTOCOL_RATE:
            return f"audio.{side}.format {audio_format!r} is not served (audio/pcm at 24000 Hz only)"
    detection = audio.get("input", {}).get("turn_detection", {"type": "server_vad"})
    if not isinstance(detection, dict) or detection.get("type") != "server_vad":
        return "only server_vad turn detection is served"
    if session.get("output_modalities", ["audio"]) != ["audio"]:
        return "output_modalities must be ['audio'] (the served system speaks)"
    instructions = session.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        return "instructions must be a text"
    return None


def load_models(kind: str, config: dict):
    """The served system's models, loaded once for the process (SystemError_ for a bad config)."""
    if kind not in SERVABLE_KIND_NAMES:
        raise SystemError_(f"cannot serve system kind {kind!r} (served: {', '.join(SERVABLE_KIND_NAMES)})")
    return load_stages(system_kind(kind).parse(config))


def prompt_from_instructions(instructions: str) -> str:
    """The cascade's system_prompt for a client's instructions (its {topic} is filled in by the
    client already, so braces are literal)."""
    return instructions.replace("{", "{{").replace("}", "}}")


@dataclass(frozen=True)
class KeyCheck:
    """The key every request must carry, and its failures, counted per address."""

    key: str
    limits: ThrottleLimits = ThrottleLimits(WINDOW_S, MAX_PER_CLIENT, per_user=None)
    failures: FailureStore = field(default_factory=RecentFailures)


@dataclass
class ServerState:
    """What one server process serves, and its counters (read by GET /status)."""

    kind: str
    config: dict
    components: tuple
    max_calls: int | None = None
    key_check: KeyCheck | None = None  # None: open to whoever reaches the (loopback) port
    calls: int = 0
    late_blocks: int = 0  # output ticks more than one block late, over all calls
    served: int = 0

    def status(self) -> dict:
        return {"system": self.kind, "calls": self.calls, "max_calls": self.max_calls,
                "late_blocks": self.late_blocks, "served": self.served}


@dataclass
class RealtimeCall:
    """One connection: its system, its resamplers, and the messages waiting to go out."""

    ws: ServerConnection
    state: ServerState
    loop: asyncio.AbstractEventLoop
    system: object = None
    instructions: str | None = None
    outgoing: asyncio.Queue = field(default_factory=asyncio.Queue)
    _from_client: StreamResampler = field(default_factory=lambda: StreamResampler(PROTOCOL_RATE, SAMPLE_RATE))
    _to_client: StreamResampler | None = None
    _pending: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.float32))
    _received: int = 0  # 16 kHz samples given to the system
    _ids: itertools.count = field(default_factory=itertools.count)
    _response: str | None = None  # the id of the response being spoken
    _reply_item: str | None = None  # the id of its audio item (what a client's truncate names)
    _user_item: str | None = None  # the id of the participant's turn being heard
    _user_start_ms: int = 0  # where that turn began in the input audio
    _said: str = ""  # its transcript sent so far
    _turn: int | None = None  # the system's turn number of that response
    _spoken: bool = False  # some of its audio went out
    _finishing: bool = False  # its text is complete; done when its audio has played
    _ticker: asyncio.Task | None = None
    late_blocks: int = 0

    def _id(self, prefix: str) -> str:
        return f"{prefix}_{next(self._ids)}"

    def put(self, event: dict) -> None:
        """Queue an event for the client (event loop thread only)."""
        self.outgoing.put_nowait(json.dumps({"event_id": self._id("event"), **event}))

    def error(self, message: str, kind: str = "invalid_request_error", client_event=None) -> None:
        error = {"type": kind, "message": message}
        if client_event:
            error["event_id"] = client_event
        self.put({"type": "error", "error": error})

    # the system's events (its worker thread, or this loop inside receive/send)

    def on_event(self, event: SystemEvent) -> None:
        if self._in_loop():
            self._translate(event)
        else:
            self.loop.call_soon_threadsafe(self._translate, event)

    def _in_loop(self) -> bool:
        try:
            return asyncio.get_running_loop() is self.loop
        except RuntimeError:
            return False

    def _translate(self, event: SystemEvent) -> None:
        kind, fields_ = event.kind, event.fields
        position_ms = int(self._received * 1000 / SAMPLE_RATE)
        if kind == EventKind.SPEECH_START:
            self._user_item, self._user_start_ms = self._id("item"), position_ms
            self.put({"type": "input_audio_buffer.speech_started", "audio_start_ms": position_ms,
                      "item_id": self._user_item})
        elif kind == EventKind.TURN_END:
            item = self._user_item or self._id("item")
            self.put({"type": "input_audio_buffer.speech_stopped", "audio_end_ms": position_ms, "item_id": item})
            self.put({"type": "input_audio_buffer.committed", "item_id": item})
            self._user_item = item
        elif kind == EventKind.TRANSCRIPT:
            seconds = max(0, position_ms - self._user_start_ms) / 1000
            self.put({"type": "conversation.item.input_audio_transcription.completed",
                      "item_id": self._user_item or self._id("item"), "content_index": 0,
                      "transcript": fields_.get("text", ""), "usage": {"type": "duration", "seconds": seconds}})
        elif kind == EventKind.DECIDED:
            if self._response is not None and self._turn != fields_.get("turn"):
                # a backchannel that played out, or an earlier guess that was never spoken
                self._close_response("completed" if self._turn is None and self._spoken else "cancelled")
            self._open_response(fields_.get("turn"))
            self._text(fields_.get("text", ""))
        elif kind == EventKind.REPLY:
            self._open_response(fields_.get("turn"))
            text = fields_.get("text", "")
            self._text(text[len(self._said):].lstrip() if text.startswith(self._said) else "")
            self._finishing = True  # response.done once its audio has played out (see tick)
        elif kind in (EventKind.YIELDED, EventKind.SPECULATION_DROPPED):
            if self._response is not None:
                self._close_response("cancelled")
        elif kind == EventKind.BACKCHANNEL:  # spoken beside the turn: a response of its own, done when played
            self._open_response(None)
            self._text(fields_.get("text", ""))
            self._finishing = True
        elif kind == EventKind.ERROR:
            self.error(str(fields_.get("message", "")), kind="server_error")

    def _open_response(self, turn) -> None:
        """A response (one audio item) for the system's turn `turn`, or None: audio the system
        speaks outside a reply (a backchannel)."""
        if self._response is None:
            self._response, self._reply_item, self._said, self._turn = self._id("resp"), self._id("item"), "", turn
            self._spoken = self._finishing = False
            self.put({"type": "response.created", "response": self._response_object("in_progress")})

    def _response_object(self, status: str) -> dict:
        return {"id": self._response, "object": "realtime.response", "status": status}

    def _place(self) -> dict:
        """Where a delta belongs: the response, its one audio item, its one content part."""
        return {"response_id": self._response, "item_id": self._reply_item, "output_index": 0, "content_index": 0}

    def _text(self, delta: str) -> None:
        if delta:
            sep = " " if self._said and not delta.startswith(" ") else ""
            self._said += sep + delta
            self.put({"type": "response.output_audio_transcript.delta", **self._place(), "delta": sep + delta})

    def _close_response(self, status: str) -> None:
        self.put({"type": "response.output_audio_transcript.done", **self._place(), "transcript": self._said})
        self.put({"type": "response.done", "response": self._response_object(status)})
        self._response, self._reply_item, self._said, self._finishing = None, None, "", False

    # the client's events

    async def handle(self, message) -> None:
        try:
            event = json.loads(message)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            return self.error(f"the message is not JSON: {e}")
        if not isinstance(event, dict) or not isinstance(event.get("type"), str):
            return self.error("an event must be a JSON object with a 'type'")
        kind, event_id = event["type"], event.get("event_id")
        if kind == "session.update":
            await self._update(event.get("session"), event_id)
        elif kind == "input_audio_buffer.append":
            await self._append(event.get("audio"), event_id)
        elif kind == "input_audio_buffer.clear":
            self._pending = np.zeros(0, dtype=np.float32)
            self.put({"type": "input_audio_buffer.cleared"})
        elif kind == "conversation.item.truncate":
            self._truncated(event, event_id)
        elif kind in ("input_audio_buffer.commit", "response.create", "response.cancel"):
            self.error(f"{kind} is not served: this server decides turns itself (server_vad)", client_event=event_id)
        else:
            self.error(f"unknown event type {kind!r}", client_event=event_id)

    def _truncated(self, event: dict, event_id) -> None:
        """The client cut a reply where its participant stopped hearing it. The system yielded
        by itself already (server VAD) and keeps no audio history: acknowledged."""
        item, index, end = event.get("item_id"), event.get("content_index"), event.get("audio_end_ms")
        if not isinstance(item, str) or not isinstance(index, int) or not isinstance(end, int) or end < 0:
            return self.error("conversation.item.truncate needs item_id, content_index and audio_end_ms",
                              client_event=event_id)
        self.put({"type": "conversation.item.truncated", "item_id": item, "content_index": index,
                  "audio_end_ms": end})

    async def _update(self, session, event_id) -> None:
        problem = session_problem(session)
        if problem:
            return self.error(problem, client_event=event_id)
        instructions = session.get("instructions")
        if instructions is not None:
            self.instructions = instructions
            if self.system is not None:  # a new prompt for the replies still to come
                self.system.settings = replace(self.system.settings,
                                               system_prompt=prompt_from_instructions(instructions))
        if self.system is None:
            await self._start()
        self.put({"type": "session.updated", "session": self._session()})

    async def _append(self, audio, event_id) -> None:
        if not isinstance(audio, str):
            return self.error("input_audio_buffer.append needs 'audio' (base64 PCM16)", client_event=event_id)
        try:
            pcm = base64.b64decode(audio, validate=True)
        except (binascii.Error, ValueError):
            return self.error("'audio' is not base64", client_event=event_id)
        if len(pcm) % 2 or len(pcm) > MAX_APPEND_S * PROTOCOL_RATE * 2:
            return self.error(f"'audio' must be whole 16-bit samples, at most {MAX_APPEND_S:.0f} s",
                              client_event=event_id)
        if self.system is None:
            await self._start()
        samples = np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0
        self._pending = np.concatenate([self._pending, self._from_client(samples)])
        while len(self._pending) >= BLOCK:
            block, self._pending = self._pending[:BLOCK], self._pending[BLOCK:]
            self._received += BLOCK
            self.system.receive(block)

    def _session(self) -> dict:
        """The session as served, in the GA shape (openai.types.realtime)."""
        session = {"type": "realtime", "output_modalities": ["audio"],
                   "audio": {"input": {"format": PCM, "turn_detection": {"type": "server_vad"}},
                             "output": {"format": PCM}}}
        if self.instructions is not None:
            session["instructions"] = self.instructions
        return session

    async def _start(self) -> None:
        """Build this call's system on the shared models (cascade-backchannel synthesizes
        its backchannels here: off the loop) and start its output clock."""
        config = dict(self.state.config)
        if self.instructions is not None:
            config["system_prompt"] = prompt_from_instructions(self.instructions)
        self.system = await asyncio.to_thread(make_system, self.state.kind, config, components=self.state.components)
        self.system.on_event = self.on_event
        self.system.start("")
        self._ticker = self.loop.create_task(self.tick())

    async def tick(self) -> None:
        """One send() per 20 ms of wall clock; a tick more than a block late is counted."""
        start, n = self.loop.time(), 0
        while True:
            n += 1
            wait = start + n * TICK_S - self.loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            elif wait < -TICK_S:
                self.late_blocks += 1
                self.state.late_blocks += 1
            block = self.system.send()
            if block is None:
                self._to_client = None  # the next reply starts with fresh filter state
                if self._finishing and self._spoken:
                    self._close_response("completed")
                continue
            if self._response is None:  # audio outside a reply (a backchannel): a response of its own
                self._open_response(None)
                self._finishing = True
            self._spoken = True
            if self._to_client is None:
                self._to_client = StreamResampler(SAMPLE_RATE, PROTOCOL_RATE)
            pcm = (np.clip(self._to_client(block), -1, 1) * 32767).astype("<i2").tobytes()
            self.put({"type": "response.output_audio.delta", **self._place(), "delta": base64.b64encode(pcm).decode()})

    async def write(self) -> None:
        try:
            while True:
                await self.ws.send(await self.outgoing.get())
        except ConnectionClosed:
            pass

    async def flush(self) -> None:
        """Send what is still queued (an error said just before the call ends)."""
        try:
            while not self.outgoing.empty():
                await self.ws.send(self.outgoing.get_nowait())
        except ConnectionClosed:
            pass

    async def close(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
        if self.system is not None:
            await asyncio.to_thread(self.system.close)


def handler(state: ServerState):
    async def serve_call(ws: ServerConnection) -> None:
        call = RealtimeCall(ws, state, asyncio.get_running_loop())
        state.calls += 1
        state.served += 1
        started = time.monotonic()
        writer = asyncio.create_task(call.write())
        call.put({"type": "session.created", "session": call._session()})
        try:
            async for message in ws:
                try:
                    await call.handle(message)
                except SystemError_ as e:  # the system could not be built: the call cannot go on
                    call.error(str(e), kind="server_error")
                    break
        except ConnectionClosed:
            pass
        finally:
            state.calls -= 1
            writer.cancel()
            await call.flush()
            await call.close()
            log.info("call closed after %.1f s, %d late blocks", time.monotonic() - started, call.late_blocks)

    return serve_call


def client_address(connection: ServerConnection, request) -> str:
    """The request's address: its peer's, or for a request relayed from loopback (a TLS front on
    this machine, which sets the header) the last X-Forwarded-For."""
    peer = str(connection.remote_address[0]) if connection.remote_address else "unknown"
    forwarded = request.headers.get_all("X-Forwarded-For")
    if forwarded and is_loopback(peer):
        return forwarded[-1].split(",")[-1].strip()[:100] or peer
    return peer


def refusal(check: KeyCheck, connection: ServerConnection, request):
    """401 for a request without the key, 429 for an address past its failures; None: let in."""
    client, path = client_address(connection, request), request.path.split("?")[0][:100]
    now = datetime.now(timezone.utc)
    wait = retry_after(check.failures, client, "", now, check.limits)
    if wait > 0:
        log.warning("refused %s from %s: too many wrong keys", path, client)
        response = connection.respond(HTTPStatus.TOO_MANY_REQUESTS,
                                      "too many requests with a wrong API key from this address: try again later\n")
        response.headers["Retry-After"] = str(int(wait) + 1)
        return response
    given = request.headers.get_all("Authorization")
    if bearer_matches(given, check.key):
        return None
    check.failures.record(client, "", now, now - timedelta(seconds=check.limits.window_s))
    log.warning("refused %s from %s: %s", path, client, "a wrong API key" if given else "no API key")
    response = connection.respond(HTTPStatus.UNAUTHORIZED,
                                  "this server needs its API key: Authorization: Bearer KEY\n")
    response.headers["WWW-Authenticate"] = 'Bearer realm="serve-realtime"'
    return response


def process_request(state: ServerState):
    """Without the key (when the server has one): 401, or 429 past the failures; then GET /status
    answers the counters; a full server refuses calls with 503."""

    def check(connection: ServerConnection, request):
        if state.key_check is not None:
            refused = refusal(state.key_check, connection, request)
            if refused is not None:
                return refused
        if request.path.split("?")[0] == "/status":
            return connection.respond(HTTPStatus.OK, json.dumps(state.status()) + "\n")
        if state.max_calls is not None and state.calls >= state.max_calls:
            return connection.respond(HTTPStatus.SERVICE_UNAVAILABLE,
                                      f"this server carries {state.max_calls} calls at most; all are taken\n")
        return None

    return check


async def serve_forever(state: ServerState, host: str, port: int, on_ready=None) -> None:
    async with serve(handler(state), host, port, process_request=process_request(state), max_size=2 ** 21) as server:
        bound = server.sockets[0].getsockname()
        if on_ready is not None:
            on_ready(f"ws://{bound[0]}:{bound[1]}/v1/realtime")
        await server.serve_forever()

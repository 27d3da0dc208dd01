"""A small local server that speaks the OpenAI-Realtime protocol, for the client tests (the Moshi
client meets Kyutai's real server instead: tests/studies/real_moshi.py).

It listens on a free localhost port in a thread, records what it received, and answers
with a 440 Hz tone when it hears (by energy) the participant stop speaking.
"""

from __future__ import annotations

import asyncio
import base64
import json
import threading
from contextlib import contextmanager

import numpy as np

from tests.studies.realtime_events import validated

RATE = 24000


def tone(seconds: float, freq: float = 440.0) -> np.ndarray:
    t = np.arange(int(seconds * RATE)) / RATE
    return (0.3 * np.sin(2 * np.pi * freq * t)).astype(np.float32)


class EnergyTurns:
    """Speech start / end from the energy of 20 ms frames (the fake's own 'VAD')."""

    def __init__(self, threshold=0.01, end_silence_s=0.3):
        self.threshold, self.end_frames = threshold, int(end_silence_s / 0.02)
        self.buffer = np.zeros(0, dtype=np.float32)
        self.speaking, self.quiet = False, 0
        self.received = []  # all audio, for the test to inspect

    def push(self, samples):
        """Returns the events this audio caused: 'start', 'end'."""
        self.received.append(samples)
        self.buffer = np.concatenate([self.buffer, samples])
        events = []
        n = int(0.02 * RATE)
        while len(self.buffer) >= n:
            frame, self.buffer = self.buffer[:n], self.buffer[n:]
            loud = np.sqrt(np.mean(frame ** 2)) > self.threshold
            if loud and not self.speaking:
                self.speaking, self.quiet = True, 0
                events.append("start")
            elif self.speaking:
                self.quiet = 0 if loud else self.quiet + 1
                if self.quiet >= self.end_frames:
                    self.speaking = False
                    events.append("end")
        return events

    def audio(self):
        return np.concatenate(self.received) if self.received else np.zeros(0, dtype=np.float32)


@contextmanager
def _serve(handler):
    import websockets

    ready = threading.Event()
    state = {}

    def run():
        loop = asyncio.new_event_loop()
        state["loop"] = loop

        async def main():
            async with websockets.serve(handler, "127.0.0.1", 0, max_size=None) as server:
                state["port"] = server.sockets[0].getsockname()[1]
                state["stop"] = loop.create_future()
                ready.set()
                await state["stop"]

        loop.run_until_complete(main())

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    ready.wait(10)
    try:
        yield state["port"]
    finally:
        state["loop"].call_soon_threadsafe(state["stop"].set_result, None)
        thread.join(5)


# The event names that differ between the dialects (openai.types.realtime / .beta.realtime).
NAMES = {"ga": {"audio": "response.output_audio.delta", "transcript": "response.output_audio_transcript.delta"},
         "beta": {"audio": "response.audio.delta", "transcript": "response.audio_transcript.delta"}}


def _session(dialect: str, update: dict | None = None) -> dict:
    """The session a server reports, in the dialect's shape, with the client's update applied."""
    update = update or {}
    if dialect == "beta":
        return {"id": "sess_1", **update}
    return {"type": "realtime", **update}  # (the GA types' session has no id)


@contextmanager
def fake_realtime(reply_s=3.0, dialect="ga", refuse_session: str | None = None, error_after_s: float | None = None,
                  reply_audio: np.ndarray | None = None):
    """An OpenAI-Realtime server: JSON events, base64 PCM16 at 24 kHz, server VAD by energy.

    Every event the client sends and every event this server sends is checked against the
    `openai` package's types for `dialect` (tests/studies/realtime_events.py); what fails is
    listed in log["invalid"] (the tests assert it empty), the client's events by type in
    log["client_events"]. `refuse_session`: answer session.update with an error saying this;
    `error_after_s`: send an error once that much audio has come in (a call going wrong);
    `reply_audio`: each reply's samples at 24 kHz (speech, where a test needs the call analysable),
    instead of a tone of `reply_s`."""
    log = {"turns": EnergyTurns(), "session_update": None, "headers": None, "client_events": [],
           "invalid": [], "truncates": [], "sent": []}

    async def handler(ws):
        log["headers"] = dict(ws.request.headers)
        ids = iter(range(10 ** 6))

        async def send(event: dict) -> None:
            event = {"event_id": f"event_{next(ids)}", **event}
            try:
                validated(event, "server", dialect)
            except ValueError as e:  # pydantic's ValidationError is a ValueError
                log["invalid"].append(f"server {event['type']}: {e}")
            log["sent"].append(event["type"])
            await ws.send(json.dumps(event))

        await send({"type": "session.created", "session": _session(dialect)})
        received_s, errored, replies = 0.0, False, 0
        async for message in ws:
            event = json.loads(message)
            try:
                validated(event, "client", dialect)
            except ValueError as e:
                log["invalid"].append(f"client {event.get('type')}: {e}")
            log["client_events"].append(event["type"])
            if event["type"] == "session.update":
                log["session_update"] = event["session"]
                if refuse_session:
                    await send({"type": "error", "error": {"type": "invalid_request_error", "message": refuse_session}})
                else:
                    await send({"type": "session.updated", "session": _session(dialect, event["session"])})
            elif event["type"] == "conversation.item.truncate":
                log["truncates"].append(event)
                await send({"type": "conversation.item.truncated", "item_id": event["item_id"],
                            "content_index": event["content_index"], "audio_end_ms": event["audio_end_ms"]})
            elif event["type"] == "input_audio_buffer.append":
                pcm = np.frombuffer(base64.b64decode(event["audio"]), dtype="<i2").astype(np.float32) / 32768
                received_s += len(pcm) / RATE
                if error_after_s is not None and received_s >= error_after_s and not errored:
                    errored = True
                    await send({"type": "error", "error": {"type": "server_error",
                                                           "message": "The server had an error while processing your request."}})
                for what in log["turns"].push(pcm):
                    if what == "start":
                        await send({"type": "input_audio_buffer.speech_started", "audio_start_ms": 0,
                                    "item_id": f"item_user_{replies}"})
                        continue
                    await send({"type": "input_audio_buffer.speech_stopped", "audio_end_ms": 0,
                                "item_id": f"item_user_{replies}"})
                    replies += 1
                    response, item = f"resp_{replies}", f"item_reply_{replies}"
                    place = {"response_id": response, "item_id": item, "output_index": 0, "content_index": 0}
                    await send({"type": "response.created", "response": {"id": response, "object": "realtime.response",
                                                                         "status": "in_progress"}})
                    await send({"type": NAMES[dialect]["transcript"], "delta": "Sure.", **place})
                    reply = ((tone(reply_s) if reply_audio is None else reply_audio) * 32767).astype("<i2")
                    for start in range(0, len(reply), 4800):
                        chunk = base64.b64encode(reply[start:start + 4800].tobytes()).decode()
                        await send({"type": NAMES[dialect]["audio"], "delta": chunk, **place})
                    await send({"type": "response.done", "response": {"id": response, "object": "realtime.response",
                                                                      "status": "completed"}})

    with _serve(handler) as port:
        yield f"ws://127.0.0.1:{port}/v1/realtime?model=test", log

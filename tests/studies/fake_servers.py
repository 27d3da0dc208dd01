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


@contextmanager
def fake_realtime(reply_s=3.0):
    """An OpenAI-Realtime-style server: JSON events, base64 PCM16 at 24 kHz, server VAD."""
    log = {"turns": EnergyTurns(), "session_update": None, "headers": None}

    async def handler(ws):
        log["headers"] = dict(ws.request.headers)
        await ws.send(json.dumps({"type": "session.created", "session": {}}))
        async for message in ws:
            event = json.loads(message)
            if event["type"] == "session.update":
                log["session_update"] = event["session"]
            elif event["type"] == "input_audio_buffer.append":
                pcm = np.frombuffer(base64.b64decode(event["audio"]), dtype="<i2").astype(np.float32) / 32768
                for what in log["turns"].push(pcm):
                    if what == "start":
                        await ws.send(json.dumps({"type": "input_audio_buffer.speech_started"}))
                    else:
                        await ws.send(json.dumps({"type": "input_audio_buffer.speech_stopped"}))
                        await ws.send(json.dumps({"type": "response.audio_transcript.delta", "delta": "Sure."}))
                        reply = (tone(reply_s) * 32767).astype("<i2")
                        for start in range(0, len(reply), 4800):
                            chunk = base64.b64encode(reply[start:start + 4800].tobytes()).decode()
                            await ws.send(json.dumps({"type": "response.audio.delta", "delta": chunk}))
                        await ws.send(json.dumps({"type": "response.done"}))

    with _serve(handler) as port:
        yield f"ws://127.0.0.1:{port}/v1/realtime?model=test", log

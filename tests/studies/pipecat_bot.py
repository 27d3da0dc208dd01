"""A real pipecat bot, as a lab would write one: pipecat's SmallWebRTCTransport behind a FastAPI
offer endpoint (POST /api/offer), pipecat's Silero VAD, and a processor that answers each
utterance it hears by saying it back (the utterance's own audio, from just before the VAD heard
it start). Run in its own virtual environment (pipecat-ai[webrtc,silero], fastapi, uvicorn: the
Makefile's peer set-up), never imported by the project:

    .venv-pipecat/bin/python tests/studies/pipecat_bot.py --port 7860 [--api-key-file F] [--never-answer]

--never-answer: the offer endpoint takes the request and never answers it (a hung bot).
It prints "pipecat bot ready on PORT" once it takes offers, and "VAD stopped at T" (time.time())
for each utterance it answers.
"""

from __future__ import annotations

import argparse
import asyncio
import hmac
import time
from collections import deque

import uvicorn
from fastapi import FastAPI, HTTPException, Request
from pipecat.audio.vad.silero import SileroVADAnalyzer
from pipecat.audio.vad.vad_analyzer import VADParams
from pipecat.frames.frames import (
    Frame,
    InputAudioRawFrame,
    OutputAudioRawFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams, PipelineWorker
from pipecat.processors.audio.vad_processor import VADProcessor
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
from pipecat.transports.base_transport import TransportParams
from pipecat.transports.smallwebrtc.connection import SmallWebRTCConnection
from pipecat.transports.smallwebrtc.request_handler import SmallWebRTCRequest, SmallWebRTCRequestHandler
from pipecat.transports.smallwebrtc.transport import SmallWebRTCTransport
from pipecat.workers.runner import WorkerRunner

RATE = 16000
CHUNK = RATE // 50 * 2  # bytes of 20 ms of 16-bit mono
PREROLL_S = 0.5  # audio kept from before the VAD's start (it confirms speech start_secs late)


class SayItBack(FrameProcessor):
    """Collects the input audio of each utterance (VAD start to stop, with a pre-roll) and, at the
    VAD's stop, says it back."""

    def __init__(self):
        super().__init__()
        self._recent: deque[bytes] = deque(maxlen=int(PREROLL_S * 50))
        self._utterance: list[bytes] | None = None

    async def process_frame(self, frame: Frame, direction: FrameDirection):
        await super().process_frame(frame, direction)
        if isinstance(frame, InputAudioRawFrame):
            (self._recent if self._utterance is None else self._utterance).append(frame.audio)
        elif isinstance(frame, VADUserStartedSpeakingFrame):
            self._utterance = list(self._recent)
            self._recent.clear()
        elif isinstance(frame, VADUserStoppedSpeakingFrame) and self._utterance is not None:
            audio, self._utterance = b"".join(self._utterance), None
            print(f"VAD stopped at {time.time():.3f}", flush=True)
            for i in range(0, len(audio) - CHUNK + 1, CHUNK):
                await self.push_frame(OutputAudioRawFrame(audio=audio[i:i + CHUNK], sample_rate=RATE, num_channels=1))
            return
        await self.push_frame(frame, direction)


async def run_bot(connection: SmallWebRTCConnection) -> None:
    transport = SmallWebRTCTransport(webrtc_connection=connection, params=TransportParams(
        audio_in_enabled=True, audio_out_enabled=True, audio_in_sample_rate=RATE, audio_out_sample_rate=RATE))
    vad = VADProcessor(vad_analyzer=SileroVADAnalyzer(params=VADParams(stop_secs=0.3)))
    worker = PipelineWorker(Pipeline([transport.input(), vad, SayItBack(), transport.output()]),
                            params=PipelineParams(audio_in_sample_rate=RATE, audio_out_sample_rate=RATE),
                            idle_timeout_secs=None)

    @transport.event_handler("on_client_disconnected")
    async def on_client_disconnected(transport, client):
        await worker.cancel()

    runner = WorkerRunner(handle_sigint=False)
    await runner.add_workers(worker)
    await runner.run()


def make_app(key: str | None, never_answer: bool) -> FastAPI:
    app = FastAPI()
    handler = SmallWebRTCRequestHandler()

    @app.post("/api/offer")
    async def offer(request: Request):
        if key is not None:
            sent = request.headers.get("authorization", "")
            if not hmac.compare_digest(sent.encode(), f"Bearer {key}".encode()):
                raise HTTPException(status_code=401, detail="a wrong or missing key")
        if never_answer:
            await asyncio.Event().wait()
        body = SmallWebRTCRequest.from_dict(await request.json())

        async def started(connection):
            asyncio.create_task(run_bot(connection))

        return await handler.handle_web_request(body, started)

    return app


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--api-key-file")
    parser.add_argument("--never-answer", action="store_true")
    args = parser.parse_args()
    key = open(args.api_key_file).read().strip() if args.api_key_file else None
    config = uvicorn.Config(make_app(key, args.never_answer), host="127.0.0.1", port=args.port, log_level="warning")
    ReadyServer(config).run()


class ReadyServer(uvicorn.Server):
    """uvicorn's server, saying once it listens that it takes offers (the line the tests wait for)."""

    async def startup(self, sockets=None):
        await super().startup(sockets)
        print(f"pipecat bot ready on {self.config.port}", flush=True)


if __name__ == "__main__":
    main()

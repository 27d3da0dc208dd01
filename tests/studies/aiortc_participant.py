"""A participant's call through the app without a browser: an aiortc peer offers a WebRTC call
as the page does, its microphone a WAV's samples on the wall clock (the app's own WebRTC path)."""

from __future__ import annotations

import asyncio
import fractions
import time
from pathlib import Path

import av
import httpx
import numpy as np
from aiortc import (
    MediaStreamTrack,
    RTCConfiguration,
    RTCPeerConnection,
    RTCSessionDescription,
)
from aiortc.mediastreams import MediaStreamError
from sqlmodel import select

from storage.db import session_scope
from storage.files import resolve
from storage.models import ConversationSession, Recording

from speech.audio import resample
from tests.waiting import sleep_until_async


class WavTrack(MediaStreamTrack):
    """The participant's microphone: 48 kHz samples sent in 20 ms frames on the wall clock,
    silence once they are played."""

    kind = "audio"

    def __init__(self, samples_48k: np.ndarray):
        super().__init__()
        self.samples = (np.clip(samples_48k, -1, 1) * 32767).astype(np.int16)
        self.position = 0
        self.start: float | None = None

    async def recv(self):
        if self.readyState != "live":
            raise MediaStreamError
        self.start = self.start or time.monotonic()
        await sleep_until_async(self.start + self.position / 48000)  # a live microphone's pace: what a call meets
        chunk = np.zeros(960, dtype=np.int16)
        piece = self.samples[self.position:self.position + 960]
        chunk[:len(piece)] = piece
        frame = av.AudioFrame.from_ndarray(chunk.reshape(1, -1), format="s16", layout="mono")
        frame.sample_rate, frame.pts, frame.time_base = 48000, self.position, fractions.Fraction(1, 48000)
        self.position += 960
        return frame


async def participant_call(base_url: str, participant: dict, system: str, mic_16k: np.ndarray, talk_s: float,
                           page_messages: tuple[str, ...] = ()) -> dict:
    """Offer a WebRTC call with `system` as the page does, talk for `talk_s` (or until the server
    ends the call: "failed" or "timeout" on the data channel, as the page hears it), end it.
    `page_messages` are sent over the data channel as soon as it opens (the page's network
    samples, say). Returns the offer's answer, the loudness of what the participant heard and the
    server's messages."""
    pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))
    pc.addTrack(WavTrack(resample(mic_16k, 16000, 48000)))
    channel = pc.createDataChannel("control")
    said: list[str] = []
    ended_by_server = asyncio.Event()

    @channel.on("message")
    def on_message(message):
        if message != "alive":
            said.append(message)
        if message in ("failed", "timeout"):
            ended_by_server.set()

    @channel.on("open")
    def on_open():
        for message in page_messages:
            channel.send(message)

    heard: list[float] = []

    @pc.on("track")
    def on_track(track):
        async def listen():
            while True:
                try:
                    frame = await track.recv()
                except MediaStreamError:
                    return
                heard.append(float(np.abs(frame.to_ndarray()).max()) / 32768)

        asyncio.ensure_future(listen())

    await pc.setLocalDescription(await pc.createOffer())  # aiortc gathers its candidates here
    headers = {"X-Participant-Secret": participant["secret"]}
    async with httpx.AsyncClient(base_url=base_url, timeout=60) as client:
        offer = {"participant": participant["participant"], "system": system,
                 "topic": participant["topics"][0], "sdp": pc.localDescription.sdp, "type": pc.localDescription.type}
        response = await client.post("/participate/api/offer", json=offer, headers=headers)
        assert response.status_code == 200, response.text
        answer = response.json()
        await pc.setRemoteDescription(RTCSessionDescription(sdp=answer["sdp"], type=answer["type"]))
        try:
            await asyncio.wait_for(ended_by_server.wait(), talk_s)
        except TimeoutError:  # the participant hangs up
            pass
        ended = await client.post(f"/participate/api/end/{answer['session_id']}", headers=headers)
        assert ended.status_code == 200, ended.text
    await pc.close()
    return {**answer, "heard": heard, "said": said}


def session_recording(engine, session_id: int, data_root: Path) -> tuple[str, Path]:
    """The call's session status and its recording's file, as the app stored them."""
    with session_scope(engine) as session:
        conversation = session.get(ConversationSession, session_id)
        recording = session.exec(select(Recording).where(Recording.session_id == conversation.id)).one()
        return conversation.status, resolve(recording.path, data_root)

"""Client for a pipecat bot (pipecat-ai's SmallWebRTCTransport): the platform is the bot's second
WebRTC peer, as pipecat's own browser client would be.

The bot answers a WebRTC offer posted to its HTTP endpoint (conventionally POST /api/offer, a JSON
body `{"sdp", "type": "offer"}`, answered by `{"sdp", "type": "answer", "pc_id"}`). The client
offers one audio track, sending and receiving: the participant's mic blocks go out as the call
gives them (so the call's clock paces them), and the bot's voice comes back as Opus, decoded by
aiortc to 48 kHz and resampled here to the call's 16 kHz. The call records both on the mic's
clock, as every call is (studies.webrtc, studies.offline_call).

The bot decides turns itself (its own VAD and turn logic): the platform only carries audio.
A bot that cannot be reached, or does not answer the offer, or whose connection is not up within
`connect_timeout_s`, fails the call's start with the reason; a connection that ends while the call
runs (the bot stopped or closed it) sets `failure`, and the call ends failed, its recording kept.

Settings: PipecatSettings. url (http:// or https://, the bot's offer endpoint), api_key_env or
api_key_file (optional: a key sent as `Authorization: Bearer KEY`, for a bot behind a gateway
that asks for one; never a literal key: systems/api_keys.py), connect_timeout_s.
"""

from __future__ import annotations

import asyncio
import fractions
import os
import threading
from dataclasses import dataclass
from typing import Self

import numpy as np

from systems.api_keys import ApiKeyError, bearer_header, key_reference_problem
from systems.base import BLOCK, SAMPLE_RATE, AudioQueue, DialogueSystem, SystemError_
from systems.events import EventKind
from systems.settings import settings_from_config


@dataclass(frozen=True)
class PipecatSettings:
    """The `pipecat` kind's settings. What each means: docs/connect-your-system.md#pipecat."""

    url: str | None = None  # the bot's offer endpoint, e.g. http://bot-host:7860/api/offer (required)
    api_key_env: str | None = None  # the environment variable holding the bot's key (sent as a Bearer token)
    api_key_file: str | None = None  # or the file holding it; both read at each call
    connect_timeout_s: float = 10.0  # s for the offer's answer, and again for the connection to come up
    # s without a packet of the bot's audio that end the call as failed: a bot's transport sends
    # silence between replies (pipecat's audio_out_auto_silence, its default), so nothing at all
    # means the bot is gone, long before WebRTC's consent checks (30 s) would say so. None: never
    # (a bot that sends nothing between replies).
    bot_silent_s: float | None = 5.0

    @classmethod
    def from_config(cls, config: dict) -> Self:
        problem = key_reference_problem(config) if isinstance(config, dict) else None
        if problem:
            raise SystemError_(f"the config {problem}")
        settings = settings_from_config(cls, config)
        if not isinstance(settings.url, str) or not settings.url.startswith(("http://", "https://")):
            raise SystemError_(f"config 'url' must be the bot's http:// or https:// offer endpoint "
                               f"(e.g. http://localhost:7860/api/offer), got {settings.url!r}")
        if not (isinstance(settings.connect_timeout_s, (int, float)) and settings.connect_timeout_s > 0):
            raise SystemError_(f"config 'connect_timeout_s' must be a positive number, got {settings.connect_timeout_s!r}")
        if settings.bot_silent_s is not None and not (isinstance(settings.bot_silent_s, (int, float))
                                                      and settings.bot_silent_s > 0):
            raise SystemError_(f"config 'bot_silent_s' must be a positive number or null, got {settings.bot_silent_s!r}")
        return settings


def _mic_track_class():
    """aiortc's MediaStreamTrack subclass, made when a call needs it (aiortc loads in ~0.5 s)."""
    import av
    from aiortc import MediaStreamTrack
    from aiortc.mediastreams import MediaStreamError

    class MicTrack(MediaStreamTrack):
        """The participant's mic blocks as the call hands them over: recv() waits for the next."""

        kind = "audio"

        def __init__(self):
            super().__init__()
            self.blocks: asyncio.Queue = asyncio.Queue()
            self._sent = 0

        async def recv(self):
            block = await self.blocks.get()
            if block is None or self.readyState != "live":
                raise MediaStreamError
            pcm = (np.clip(block, -1, 1) * 32767).astype(np.int16)
            frame = av.AudioFrame.from_ndarray(pcm.reshape(1, -1), format="s16", layout="mono")
            frame.sample_rate = SAMPLE_RATE
            frame.pts = self._sent
            frame.time_base = fractions.Fraction(1, SAMPLE_RATE)
            self._sent += len(pcm)
            return frame

    return MicTrack


class PipecatClient(DialogueSystem):
    settings_class = PipecatSettings

    def __init__(self, config: dict, on_event=None, settings=None):
        super().__init__(config, on_event, settings)
        self.url = self.settings.url
        self.out = AudioQueue()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._connected = threading.Event()
        self._done: asyncio.Event | None = None
        self._mic = None
        self._closing = False

    def start(self, topic: str = "") -> None:
        super().start(topic)
        self._thread = threading.Thread(target=self._run, name="PipecatClient", daemon=True)
        self._thread.start()
        most_s = 2 * self.settings.connect_timeout_s + 1.0  # the offer's answer, then the connection
        if not self._connected.wait(most_s) or self.failure:
            reason = self.failure or f"{self.url}: the bot's connection was not up within {most_s:g} s"
            self.close()
            raise SystemError_(reason)

    def receive(self, block: np.ndarray) -> None:
        if self._mic is not None and not self._closing and self.failure is None:
            self._call_soon(self._mic.blocks.put_nowait, np.asarray(block, dtype=np.float32))

    def send(self) -> np.ndarray | None:
        return self.out.take(BLOCK)

    def close(self) -> None:
        self._closing = True
        if self._done is not None:
            self._call_soon(self._done.set)
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _call_soon(self, callback, *args) -> None:
        """`callback(*args)` on the connection's loop, unless the connection has ended (a failed
        call's loop closes while the call's thread still hands over its last blocks)."""
        try:
            self._loop.call_soon_threadsafe(callback, *args)
        except RuntimeError:  # the loop is closed
            pass

    def fail(self, reason: str) -> None:
        """The call cannot go on (the first reason holds)."""
        if self.failure is None and not self._closing:
            self.failure = reason
            self.emit(EventKind.ERROR, message=reason)
        if self._done is not None:
            self._done.set()

    # the connection's thread

    def _run(self) -> None:
        self._loop = asyncio.new_event_loop()
        try:
            self._loop.run_until_complete(self._session())
        except SystemError_ as e:
            self.fail(str(e))
        except Exception as e:  # a protocol error: the reason, not a traceback
            self.fail(f"{self.url}: {type(e).__name__}: {e}")
        finally:
            self._connected.set()
            self._loop.close()

    def _headers(self) -> dict:
        try:
            return bearer_header(self.config, os.environ)
        except ApiKeyError as e:
            raise SystemError_(f"{self.url}: cannot send the API key: {e}") from None

    async def _answer(self, offer) -> dict:
        """The bot's answer to `offer`; SystemError_ saying why there is none."""
        import httpx

        body = {"sdp": offer.sdp, "type": offer.type}
        timeout = self.settings.connect_timeout_s
        try:
            async with httpx.AsyncClient(timeout=timeout, trust_env=False) as client:
                response = await client.post(self.url, json=body, headers=self._headers())
        except httpx.TimeoutException:
            raise SystemError_(f"{self.url}: the bot did not answer the offer within {timeout:g} s") from None
        except httpx.HTTPError as e:
            raise SystemError_(f"{self.url}: the bot cannot be reached: {type(e).__name__}: {e}") from None
        if response.status_code != 200:
            why = " (the API key is missing or wrong)" if response.status_code in (401, 403) else ""
            raise SystemError_(f"{self.url}: the bot answered HTTP {response.status_code}{why}: "
                               f"{response.text.strip()[:200]}")
        try:
            answer = response.json()
            if answer.get("type") != "answer" or not isinstance(answer.get("sdp"), str):
                raise ValueError
        except ValueError:
            raise SystemError_(f"{self.url}: the bot's answer is not a WebRTC answer {{sdp, type: answer}}") from None
        return answer

    async def _session(self) -> None:
        from aiortc import RTCPeerConnection, RTCSessionDescription

        self._done = asyncio.Event()
        self._mic = _mic_track_class()()
        pc = RTCPeerConnection()
        up, ending = asyncio.Event(), asyncio.Event()
        readers = []

        @pc.on("track")
        def on_track(track):
            if track.kind == "audio":
                readers.append(asyncio.ensure_future(self._read_bot(track)))

        @pc.on("connectionstatechange")
        def on_state():
            if pc.connectionState == "connected":
                up.set()
            elif pc.connectionState in ("failed", "closed") and up.is_set() and not ending.is_set():
                self.fail(f"{self.url}: the bot's connection {pc.connectionState} mid-call")

        try:
            pc.addTrack(self._mic)
            await pc.setLocalDescription(await pc.createOffer())  # aiortc gathers its candidates here
            answer = await self._answer(pc.localDescription)
            await pc.setRemoteDescription(RTCSessionDescription(sdp=answer["sdp"], type="answer"))
            try:
                await asyncio.wait_for(up.wait(), self.settings.connect_timeout_s)
            except TimeoutError:
                raise SystemError_(f"{self.url}: the bot answered the offer but the connection was not up within "
                                   f"{self.settings.connect_timeout_s:g} s") from None
            self._connected.set()
            self.emit(EventKind.CONNECTED, url=self.url, pc_id=answer.get("pc_id"))
            await self._done.wait()
        finally:
            ending.set()  # our own close below is no failure of the bot's
            self._mic.blocks.put_nowait(None)
            for reader in readers:
                reader.cancel()
            await pc.close()

    async def _read_bot(self, track) -> None:
        """The bot's voice, decoded and resampled to 16 kHz mono, into the output queue."""
        import av
        from aiortc.mediastreams import MediaStreamError

        resampler = av.AudioResampler(format="s16", layout="mono", rate=SAMPLE_RATE)
        silent_s = self.settings.bot_silent_s
        while True:
            try:
                frame = await asyncio.wait_for(track.recv(), silent_s)
            except MediaStreamError:
                if not self._closing:
                    self.fail(f"{self.url}: the bot's audio ended mid-call")
                return
            except TimeoutError:
                self.fail(f"{self.url}: no audio from the bot for {silent_s:g} s (bot_silent_s): it stopped or "
                          "its connection broke")
                return
            for out in resampler.resample(frame):
                self.out.put(out.to_ndarray().reshape(-1).astype(np.float32) / 32768.0)

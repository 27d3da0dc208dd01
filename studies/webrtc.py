"""Browser calls over WebRTC (aiortc, server side): the participant's mic goes to the dialogue
system and into the recorder; the system's audio goes back, paced by the server, and into the
recorder at the mic-clock position reached when it was sent (see studies/recorder.py).

Findings this follows (shared notes on WebRTC here): the ICE servers are the app's setting
(studies.ice; none: an empty list, no STUN over a closed network); mic frames' pts are RTP
timestamps at 48 kHz, so a pts jump is packet loss; resample with PyAV without a fixed frame size;
the output track sends exactly one 20 ms block per 20 ms.
"""

from __future__ import annotations

import asyncio
import fractions
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path

import av
import numpy as np
from aiortc import (
    MediaStreamTrack,
    RTCConfiguration,
    RTCPeerConnection,
    RTCSessionDescription,
)
from aiortc.mediastreams import MediaStreamError

from studies.audio_receive_buffer import use_for_audio
from studies.network_figures import NetworkLog, page_sample, server_fields
from studies.recorder import SAMPLE_RATE, CallEvent, TwoChannelRecorder
from studies.server_load import LoadMeter
from studies.sessions import HEARTBEAT_S
from systems.base import BLOCK

log = logging.getLogger(__name__)
MIC_RATE = 48000  # RTP clock of Opus
# A system block that leaves more than this after its due time reached the participant late: the
# server fell behind (a busy event loop), and the recording places it earlier than it was heard.
LATE_BLOCK_S = 0.06
NETWORK_SAMPLE_S = 1.0  # how often each side writes its network figures (studies.network_figures)
# No microphone audio for this long ends a call as dropped. A browser sends its mic's packets all
# through a call, silence included and with its tab hidden; one that went away without closing
# the connection (its process killed, the machine asleep) otherwise holds the call, and its place
# in the waiting room, until ICE's consent expires 30 s later (RFC 7675).
MIC_SILENT_S = 5.0
ALIVE_CHANNEL = "alive"  # the data channel the server says "alive" on twice a second (the call page opens it)


class SystemTrack(MediaStreamTrack):
    """The system's voice: one 20 ms block per 20 ms of wall clock, silence when it is quiet."""

    kind = "audio"

    def __init__(self, call: "Call"):
        super().__init__()
        self.call = call
        self._start: float | None = None
        self._sent = 0  # blocks

    async def recv(self):
        if self.readyState != "live":
            raise MediaStreamError
        if self._start is None:
            self._start = time.monotonic()
        due = self._start + self._sent * BLOCK / SAMPLE_RATE
        wait = due - time.monotonic()
        if wait > 0:
            await asyncio.sleep(wait)
        elif -wait > LATE_BLOCK_S and self.call.status is None:
            # after the call's end the track sends silence nobody records until the connection
            # closes: its lateness (the loop busy closing calls) is no participant's
            self.call.recorder.late(-wait)
        samples = self.call.next_output_block()
        frame = av.AudioFrame.from_ndarray(samples.reshape(1, -1), format="s16", layout="mono")
        frame.sample_rate = SAMPLE_RATE
        frame.pts = self._sent * BLOCK
        frame.time_base = fractions.Fraction(1, SAMPLE_RATE)
        self._sent += 1
        return frame


@dataclass
class Call:
    """One participant's call: peer connection, dialogue system, recorder."""

    session_id: int
    participant: str
    system: object
    recorder: TwoChannelRecorder
    seconds: float
    on_finished: object  # callable(call, status)
    on_heartbeat: object = None  # callable(call) -> bool, run every HEARTBEAT_S in a thread (the call's lease)
    network_path: Path | None = None  # both ends' network figures (studies.network_figures); None: not kept
    pc: RTCPeerConnection = field(default_factory=lambda: peer_connection())  # with ICE servers: peer_connection(config)
    status: str | None = None
    _mic_buffer: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.float32))
    _tasks: list = field(default_factory=list)
    _channel: object = None  # the page's "control" channel: ordered and reliable
    _alive_channel: object = None  # the page's "alive" channel: unordered, never retransmitted
    _done: asyncio.Event = field(default_factory=asyncio.Event)
    _network: NetworkLog | None = None
    _mic_at: float | None = None  # time.monotonic() of the last mic frame received
    load: LoadMeter = field(default_factory=LoadMeter)  # how far behind the server is (studies.server_load)

    def next_output_block(self) -> np.ndarray:
        if self.status is not None:
            return np.zeros(BLOCK, dtype=np.int16)
        block = self.system.send()
        if block is None:
            return np.zeros(BLOCK, dtype=np.int16)
        block16 = (np.clip(block, -1, 1) * 32767).astype(np.int16)
        self.recorder.add_system(block16)
        return block16

    async def answer(self, sdp: str, type_: str) -> RTCSessionDescription:
        pc = self.pc

        @pc.on("track")
        def on_track(track):
            if track.kind == "audio":
                self._tasks.append(asyncio.ensure_future(self._read_mic(track)))

        @pc.on("datachannel")
        def on_datachannel(channel):
            if channel.label == ALIVE_CHANNEL:
                self._alive_channel = channel
                return
            self._channel = channel

            @channel.on("message")
            def on_message(message):
                if message == "end":
                    background(self.finish("complete"), f"ending session {self.session_id}")
                else:
                    self._page_network(message)

        @pc.on("connectionstatechange")
        async def on_state():
            self.recorder.log(CallEvent.CONNECTION, state=pc.connectionState)
            if pc.connectionState in ("failed", "closed") and self.status is None:
                # closed without the page's "end" (tab closed), or the network broke: keep what arrived
                await background(self.finish("incomplete"), f"ending session {self.session_id}")

        pc.addTrack(SystemTrack(self))
        await pc.setRemoteDescription(RTCSessionDescription(sdp=sdp, type=type_))
        use_for_audio(pc)  # a lost mic packet is one 20 ms gap in the recording, not aiortc's five
        await pc.setLocalDescription(await pc.createAnswer())
        self._tasks.append(asyncio.ensure_future(self._timer()))
        self._tasks.append(asyncio.ensure_future(self._watch_disconnect()))
        if self.network_path is not None:
            self._network = NetworkLog(self.network_path)
            self._tasks.append(background(self._sample_network(), f"network figures of session {self.session_id}"))
        if self.on_heartbeat is not None:
            self._tasks.append(background(self._heartbeat(), f"heartbeat of session {self.session_id}"))
        return pc.localDescription

    async def _read_mic(self, track) -> None:
        resampler = av.AudioResampler(format="s16", layout="mono", rate=SAMPLE_RATE)
        expected_pts = None
        while self.status is None:
            try:
                frame = await track.recv()
            except MediaStreamError:
                break
            self._mic_at = time.monotonic()
            if expected_pts is not None and frame.pts is not None and frame.pts > expected_pts:
                lost = int(round((frame.pts - expected_pts) * SAMPLE_RATE / frame.sample_rate))
                self._mic(np.zeros(lost, dtype=np.int16), lost=True)
            if frame.pts is not None:
                expected_pts = frame.pts + frame.samples
            for out in resampler.resample(frame):
                self._mic(out.to_ndarray().reshape(-1))
        if self.status is None:
            await self.finish("incomplete")

    def _mic(self, samples: np.ndarray, lost: bool = False) -> None:
        if self.status is not None:
            return
        if lost:
            self.recorder.log(CallEvent.LOST, samples=len(samples))
            self.recorder.lost_samples += len(samples)
        self.recorder.add_mic(samples)
        # the system hears 20 ms blocks
        self._mic_buffer = np.concatenate([self._mic_buffer, samples.astype(np.float32) / 32768.0])
        while len(self._mic_buffer) >= BLOCK:
            block, self._mic_buffer = self._mic_buffer[:BLOCK], self._mic_buffer[BLOCK:]
            self.system.receive(block)

    async def _timer(self) -> None:
        await asyncio.sleep(self.seconds)
        if self.status is None:
            self.send_message("timeout")
            await self.finish("complete")

    async def _heartbeat(self) -> None:
        """Keep this process's lease on the call (studies.sessions); a call that lost it was closed
        by another process that judged this one dead, and stops here without writing more."""

        loop = asyncio.get_running_loop()
        while self.status is None:
            await asyncio.sleep(HEARTBEAT_S)
            if self.status is None and not await loop.run_in_executor(None, self.on_heartbeat, self):
                # Only when this process stalled past the lease: the other process registered the
                # file as it found it, so the call stops (not "finished": its row is closed already).
                log.error("session %s lost its lease (closed by another process): stopping the call", self.session_id)
                self.status = "lost"
                try:
                    await loop.run_in_executor(None, self.system.close)
                    await loop.run_in_executor(None, self.recorder.close)
                    await self.pc.close()
                    if self._network is not None:
                        self._network.close()
                finally:
                    self._done.set()

    async def _watch_disconnect(self, grace_s: float = 5.0) -> None:
        """A connection "disconnected" for longer than `grace_s`, or a microphone silent for
        MIC_SILENT_S, is treated as dropped, a system that failed (its server died, or said an
        error) ends the call as failed. Also tells the page twice a second that the server is alive
        (a killed server cannot say goodbye)."""
        since = None
        while self.status is None:
            await asyncio.sleep(0.5)
            if self.system.failure is not None:
                log.error("session %s: the dialogue system failed: %s", self.session_id, self.system.failure)
                self.recorder.log(CallEvent.FAILED, reason=self.system.failure)
                self.send_message("failed")
                await self.finish("failed")
                return
            self._send_alive()
            if self._mic_at is not None and time.monotonic() - self._mic_at > MIC_SILENT_S:
                self.recorder.log(CallEvent.DROPPED, reason=f"no microphone audio for {MIC_SILENT_S:g} s")
                await self.finish("incomplete")
                return
            if self.pc.connectionState == "disconnected":
                since = since or time.monotonic()
                if time.monotonic() - since > grace_s:
                    await self.finish("incomplete")
            else:
                since = None

    def _page_network(self, message) -> None:
        """The page's network sample (studies.network_figures.page_sample), written with where
        the microphone's clock was when it arrived; any other message is ignored."""
        sample = page_sample(message) if self._network is not None else None
        if sample is not None:
            self._network.write("page", self.recorder.elapsed(), self._mic_s(), sample)

    def _mic_s(self) -> float:
        return self.recorder.mic_pos / self.recorder.sample_rate

    async def _sample_network(self) -> None:
        loop = asyncio.get_running_loop()
        while self.status is None:
            asked = loop.time()
            await asyncio.sleep(NETWORK_SAMPLE_S)
            load = self.load.sample(loop.time() - asked - NETWORK_SAMPLE_S)  # how late the loop woke it
            if self.status is None:
                await self._server_network(load)

    async def _server_network(self, load: dict | None = None) -> None:
        """One server row: aiortc's figures of the microphone's stream and of the page's reports
        on the system's, with the recorder's lost samples and late blocks, and how far the server
        itself was behind (studies.server_load)."""
        if self._network is None:
            return
        try:
            stats = await asyncio.wait_for(self.pc.getStats(), 1.0)
        except Exception:  # a connection torn down meanwhile: its figures are the last row's
            return
        fields = server_fields(stats.values(), MIC_RATE, self.recorder.lost_samples, self.recorder.late_blocks)
        self._network.write("server", self.recorder.elapsed(), self._mic_s(), {**fields, **(load or {})})

    def send_message(self, text: str, channel=None) -> None:
        channel = channel or self._channel
        try:
            if channel is not None and channel.readyState == "open":
                channel.send(text)
        except Exception:  # the page may be gone already
            pass

    def _send_alive(self) -> None:
        """On the page's unordered, unreliable "alive" channel where it opened one: on the reliable
        "control" channel one lost message holds back every later one until SCTP resends it (its
        retransmission timer doubles from 1 s), and through a network losing 20 % of its packets
        the page heard nothing for over 5 s and ended a working call as lost."""
        alive = self._alive_channel if self._alive_channel is not None and self._alive_channel.readyState == "open" \
            else self._channel
        self.send_message("alive", alive)

    async def finish(self, status: str) -> None:
        """End the call (once); every caller returns when the files and rows are written."""
        if self.status is not None:
            await self._done.wait()
            return
        self.status = status
        self.recorder.log(CallEvent.FINISH, status=status)
        current = asyncio.current_task()
        for task in self._tasks:
            if task is not current:
                task.cancel()
        loop = asyncio.get_running_loop()
        try:
            await self._server_network()  # the call's final counts, before the connection closes
            await loop.run_in_executor(None, self.system.close)
            # off the event loop, which sends every other call's audio: the file's flush and fsync
            # wait on the disk
            await loop.run_in_executor(None, self.recorder.close)
            await self.pc.close()
            if self._network is not None:
                self._network.close()
            await loop.run_in_executor(None, self.on_finished, self, status)
        except Exception:
            log.exception("ending session %s (%s) failed", self.session_id, status)
            raise
        finally:
            self._done.set()


def peer_connection(configuration: RTCConfiguration | None = None) -> RTCPeerConnection:
    """A call's peer connection with aiortc's `configuration` (studies.ice: the ICE servers the
    page got for the call); none: no ICE servers at all, so aiortc dials no public STUN server."""
    return RTCPeerConnection(configuration or RTCConfiguration(iceServers=[]))


def background(coroutine, what: str) -> asyncio.Task:
    """A task whose failure is logged (a bare ensure_future loses it: nobody awaits the task)."""
    task = asyncio.ensure_future(coroutine)

    def report(done: asyncio.Task) -> None:
        if not done.cancelled() and done.exception() is not None:
            log.error("%s failed: %s", what, done.exception(), exc_info=done.exception())

    task.add_done_callback(report)
    return task

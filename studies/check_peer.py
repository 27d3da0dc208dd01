"""The server's end of a connection check's WebRTC connection (studies/connection_check.py): it
sends the participant's audio straight back, so that the page measures audio both ways, stores
nothing, and closes itself after PEER_LIFETIME_S. Imported when a check connects (aiortc loads
then, as for a call)."""

from __future__ import annotations

import asyncio
import logging

from aiortc import MediaStreamTrack, RTCPeerConnection, RTCSessionDescription

log = logging.getLogger(__name__)

PEER_LIFETIME_S = 20.0  # the page needs at most 15 s to connect and then 3 s of audio
MAX_PEERS = 32  # check peers open at once in one process (each holds sockets and an Opus codec)


class EchoTrack(MediaStreamTrack):
    """The participant's audio, sent back as it arrives."""

    kind = "audio"

    def __init__(self, source: MediaStreamTrack):
        super().__init__()
        self.source = source

    async def recv(self):
        return await self.source.recv()


class CheckPeers:
    """The open check peers of this process, by check id."""

    def __init__(self, lifetime_s: float = PEER_LIFETIME_S, max_peers: int = MAX_PEERS):
        self.lifetime_s = lifetime_s
        self.max_peers = max_peers
        self.peers: dict[int, RTCPeerConnection] = {}

    def full(self) -> bool:
        return len(self.peers) >= self.max_peers

    async def answer(self, check_id: int, sdp: str, type_: str, configuration) -> RTCSessionDescription:
        """The answer to the page's offer from a new peer with aiortc's `configuration` (the
        ICE servers the page got); ValueError (one line) for an offer that cannot be used."""
        pc = RTCPeerConnection(configuration)
        self.peers[check_id] = pc

        @pc.on("track")
        def on_track(track):
            if track.kind == "audio":
                # Added while the offer is applied: the answer sends on the offer's own audio
                # transceiver (sendrecv) rather than a second one.
                pc.addTrack(EchoTrack(track))

        @pc.on("connectionstatechange")
        async def on_state():
            if pc.connectionState in ("failed", "closed"):
                await self.close(check_id)

        try:
            await pc.setRemoteDescription(RTCSessionDescription(sdp=sdp, type=type_))
            await pc.setLocalDescription(await pc.createAnswer())
        except Exception as e:
            await self.close(check_id)
            first = str(e).splitlines()[0] if str(e) else type(e).__name__
            raise ValueError(first) from None
        loop = asyncio.get_running_loop()
        loop.call_later(self.lifetime_s, lambda: asyncio.ensure_future(self.close(check_id)))
        return pc.localDescription

    async def close(self, check_id: int) -> None:
        pc = self.peers.pop(check_id, None)
        if pc is not None:
            try:
                await pc.close()
            except Exception:  # a half-made peer: nothing of it is kept anyway
                log.debug("closing the peer of connection check %s failed", check_id, exc_info=True)

    async def close_all(self) -> None:
        for check_id in list(self.peers):
            await self.close(check_id)

"""The microphone's receive buffer (studies.audio_receive_buffer): on the same packets, with the
same losses, aiortc's own audio buffer blanks five frames a loss and this one exactly the lost one;
late packets within the prefetch are put back in order; the 16-bit sequence wraps; a real
aiortc peer connection takes it."""

from __future__ import annotations

import asyncio
import random

from aiortc import RTCPeerConnection
from aiortc.jitterbuffer import JitterBuffer
from aiortc.mediastreams import AudioStreamTrack
from aiortc.rtp import RtpPacket

from studies.audio_receive_buffer import PREFETCH, AudioReceiveBuffer, use_for_audio

FRAME = 960  # Opus at 48 kHz, 20 ms


def packets(count: int, first_sequence: int = 1000):
    """`count` consecutive audio packets as the receiver hands them over (payload depacketised)."""
    made = []
    for k in range(count):
        packet = RtpPacket(payload_type=111, sequence_number=(first_sequence + k) % 65536, timestamp=k * FRAME)
        packet._data = bytes([k % 256])
        made.append(packet)
    return made


def released(buffer, arriving) -> list[int]:
    """The RTP timestamps the buffer releases, in order, as the packets arrive."""
    out = []
    for packet in arriving:
        _, frame = buffer.add(packet)
        if frame is not None:
            out.append(frame.timestamp)
    return out


def test_a_lost_packet_is_one_gap_where_aiortc_loses_five():
    sent = packets(1000)
    lost = set(random.Random(7).sample(range(20, 980), 20))  # 2 %, none next to the ends
    arriving = [p for k, p in enumerate(sent) if k not in lost]
    ours = released(AudioReceiveBuffer(), arriving)
    theirs = released(JitterBuffer(capacity=16, prefetch=4), arriving)
    expected = [k * FRAME for k in range(1000 - PREFETCH) if k not in lost]
    assert ours == expected  # every packet that came, in order; the last `prefetch` wait for more
    assert len(theirs) <= len(expected) - 4 * len(lost)  # aiortc's: about five frames a loss (measured in calls)
    # the recorder fills each timestamp jump with zeros: one frame per lost packet
    jumps = [(b - a) // FRAME - 1 for a, b in zip(ours, ours[1:]) if b - a != FRAME]
    assert sum(jumps) == len(lost)


def test_a_late_packet_within_the_prefetch_is_put_back_in_order_and_a_later_one_is_dropped():
    sent = packets(40)
    order = list(range(40))
    order[10], order[12] = order[12], order[10]  # 10 comes two packets late: within the prefetch
    order.remove(20)
    order.insert(30, 20)  # 20 comes ten packets late: its place was passed over
    buffer = AudioReceiveBuffer()
    out = released(buffer, [sent[k] for k in order])
    assert out == [k * FRAME for k in range(40 - PREFETCH) if k != 20]
    assert (buffer.skipped, buffer.too_late) == (1, 1)


def test_the_sequence_number_wraps():
    out = released(AudioReceiveBuffer(), packets(100, first_sequence=65500))
    assert out == [k * FRAME for k in range(100 - PREFETCH)]


def test_a_peer_connection_takes_it_for_its_audio_receiver():
    async def exchange():
        caller, callee = RTCPeerConnection(), RTCPeerConnection()
        try:
            caller.addTrack(AudioStreamTrack())
            await caller.setLocalDescription(await caller.createOffer())
            await callee.setRemoteDescription(caller.localDescription)
            use_for_audio(callee)
            return [t.receiver._RTCRtpReceiver__jitter_buffer for t in callee.getTransceivers() if t.kind == "audio"]
        finally:
            await caller.close()
            await callee.close()

    buffers = asyncio.run(exchange())
    assert len(buffers) == 1 and isinstance(buffers[0], AudioReceiveBuffer)

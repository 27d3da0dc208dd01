"""The receive buffer of a call's microphone packets: a lost packet is one 20 ms gap, not five.

aiortc 1.16 (its `JitterBuffer(capacity=16, prefetch=4)` for audio) releases a packet only when the
packets after it up to `prefetch` are all there. Behind a missing packet nothing is released until
16 later packets overflow the buffer, and the overflow then drops the packets held before the gap
with it: measured through a relay losing 2 % of the packets, each loss blanked 100-120 ms of the
recording (2.3-2.5 s of zeros in 26 s), and the microphone stalled 320 ms each time. Here a missing
packet is passed over as soon as `prefetch` packets after it have arrived (the same wait aiortc
gives a late packet), so the recorder sees one RTP timestamp jump and fills exactly the lost 20 ms
with zeros, in place (studies/webrtc.py).

Opus sends one packet a frame, so a packet is released as one frame, at most one per packet
added (the receiver takes one from each `add`): the buffer keeps `prefetch` packets, as aiortc's.
"""

from __future__ import annotations

from aiortc.jitterbuffer import JitterFrame

PREFETCH = 4  # packets held before the oldest is released: 80 ms for a late packet to arrive, as aiortc's
RESTART_AFTER = 3000  # a jump of more sequence numbers (60 s of audio) is a new stream, not a loss
SEQUENCE_SPAN = 1 << 16


def sequence_distance(later: int, earlier: int) -> int:
    """How many sequence numbers `later` is after `earlier`, across the 16-bit wrap; negative
    when it is before.

    >>> sequence_distance(3, 65534)
    5
    >>> sequence_distance(65534, 3)
    -5
    """
    distance = (later - earlier) % SEQUENCE_SPAN
    return distance - SEQUENCE_SPAN if distance >= SEQUENCE_SPAN // 2 else distance


class AudioReceiveBuffer:
    """Drop-in for aiortc's audio jitter buffer: `add(packet) -> (pli, frame or None)`."""

    def __init__(self, prefetch: int = PREFETCH):
        self.prefetch = prefetch
        self._held: dict[int, object] = {}  # sequence number -> RTP packet
        self._next: int | None = None  # the sequence number released next
        self._newest: int | None = None
        self.skipped = 0  # sequence numbers passed over as lost
        self.too_late = 0  # packets that came after their place was passed over

    @property
    def capacity(self) -> int:
        return self.prefetch + 1

    def add(self, packet) -> tuple[bool, JitterFrame | None]:
        sequence = packet.sequence_number
        if self._next is None or abs(sequence_distance(sequence, self._next)) > RESTART_AFTER:
            self._held.clear()
            self._next = self._newest = sequence
        if sequence_distance(sequence, self._next) < 0:
            self.too_late += 1  # its gap is in the recording already
            return False, None
        self._held[sequence] = packet
        if sequence_distance(sequence, self._newest) > 0:
            self._newest = sequence
        # Pass over what is missing once `prefetch` packets after it are here.
        while self._next not in self._held and sequence_distance(self._newest, self._next) >= self.prefetch:
            self._next = (self._next + 1) % SEQUENCE_SPAN
            self.skipped += 1
        if self._next in self._held and sequence_distance(self._newest, self._next) >= self.prefetch:
            released = self._held.pop(self._next)
            self._next = (self._next + 1) % SEQUENCE_SPAN
            return False, JitterFrame(data=released._data, timestamp=released.timestamp)
        return False, None


def use_for_audio(pc) -> None:
    """Give every audio receiver of the peer connection `pc` this buffer in place of aiortc's.
    Call it after the remote description is set (the receivers exist) and before media flows.
    aiortc keeps the buffer in a private attribute of RTCRtpReceiver; requirements.txt pins
    aiortc, and tests/studies/test_audio_receive_buffer.py fails if the attribute moves."""
    for transceiver in pc.getTransceivers():
        if transceiver.kind == "audio":
            receiver = transceiver.receiver
            if not hasattr(receiver, "_RTCRtpReceiver__jitter_buffer"):
                raise RuntimeError("aiortc's RTCRtpReceiver no longer keeps its jitter buffer where expected")
            receiver._RTCRtpReceiver__jitter_buffer = AudioReceiveBuffer()

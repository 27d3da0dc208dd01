"""A UDP relay that impairs what it forwards, as a bad network between a participant and a TURN
server would (this kernel has no netem): each client's datagrams go to one upstream address through
a socket of that client's own, and the answers come back to the client; every datagram, in both
directions, is delayed by `delay_ms` plus a jitter drawn uniformly from [-jitter_ms, +jitter_ms],
and lost with probability `loss` independently of the others. With `impair_only` (a network), the
clients outside it are relayed at once, unimpaired and uncounted.

Order is kept (as on one network path): a datagram never leaves before the one that arrived before
it in the same direction, so a draw that would overtake is held back to its predecessor's time.
The loss and jitter draws come from one random generator per direction, seeded from `seed`: the
same datagrams in the same order are dropped and delayed the same way on every run.

    relay = ImpairmentRelay(("127.0.0.1", 0), upstream=("10.0.0.1", 3478), delay_ms=80, jitter_ms=20,
                            loss=0.02, seed=7)
    relay.start()        # a thread; relay.address is where clients send
    ...
    relay.stop(); relay.counts()

As a process in a network namespace (`ip netns exec NS python -m tests.udp_impairment ...`) it prints
its address on its first line and writes its counts as JSON to --counts at exit (SIGTERM).
"""

from __future__ import annotations

import argparse
import dataclasses
import heapq
import ipaddress
import json
import random
import selectors
import signal
import socket
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

DOWNSTREAM, UPSTREAM = "to-client", "to-server"
MAX_DATAGRAM = 65535


@dataclass(frozen=True)
class Direction:
    """One direction's counts: every datagram, and those that carry RTP media (audio) relayed by
    TURN, the packets a receiver's loss figures count."""

    received: int
    dropped: int
    sent: int
    rtp_received: int = 0
    rtp_dropped: int = 0
    rtp_dropped_at: tuple[float, ...] = ()  # wall clock (time.time) of each RTP packet dropped
    # each RTP stream's [received, dropped], by its SSRC (a string: JSON's keys), in the order the
    # streams began: a page's connection check and its call are two streams, and a receiver's loss
    # figures count one
    rtp_streams: dict[str, list[int]] = dataclasses.field(default_factory=dict)


@dataclass
class _Tally:
    """One direction's counts as the relay keeps them; `Direction` is what it reports."""

    received: int = 0
    dropped: int = 0
    sent: int = 0
    rtp_dropped_at: list[float] = dataclasses.field(default_factory=list)
    rtp_streams: dict[str, list[int]] = dataclasses.field(default_factory=dict)

    def report(self) -> Direction:
        return Direction(self.received, self.dropped, self.sent,
                         rtp_received=sum(received for received, _ in self.rtp_streams.values()),
                         rtp_dropped=sum(dropped for _, dropped in self.rtp_streams.values()),
                         rtp_dropped_at=tuple(self.rtp_dropped_at),
                         rtp_streams={ssrc: list(n) for ssrc, n in self.rtp_streams.items()})


def rtp_ssrc(data: bytes) -> int | None:
    """The SSRC of the RTP packet (not RTCP, STUN or DTLS) a datagram between a TURN client and
    server carries inside ChannelData (first byte 0x40-0x7f, 4-byte header) or in the DATA attribute
    of a Send or Data indication; None when it carries none. SRTP leaves the RTP header readable:
    version 2, and a second byte outside RTCP's packet types 192-223 (RFC 5761)."""
    if len(data) >= 4 and 0x40 <= data[0] <= 0x7F:
        inner = data[4:]
    elif len(data) >= 20 and int.from_bytes(data[:2], "big") in (0x0016, 0x0017):
        inner, position = b"", 20
        while position + 4 <= len(data):
            kind, length = int.from_bytes(data[position:position + 2], "big"), int.from_bytes(data[position + 2:position + 4], "big")
            if kind == 0x0013:  # DATA
                inner = data[position + 4:position + 4 + length]
                break
            position += 4 + (length + 3) // 4 * 4
    else:
        return None
    if len(inner) >= 12 and inner[0] >> 6 == 2 and not 192 <= inner[1] <= 223:
        return int.from_bytes(inner[8:12], "big")
    return None


class ImpairmentRelay:
    """The relay (see the module's description). Not thread-safe apart from start/stop/counts."""

    def __init__(self, listen: tuple[str, int], upstream: tuple[str, int], delay_ms: float = 80.0,
                 jitter_ms: float = 20.0, loss: float = 0.02, seed: int = 0, impair_only: str | None = None):
        if not 0 <= loss < 1 or jitter_ms < 0 or delay_ms < jitter_ms:
            raise ValueError("need 0 <= loss < 1 and 0 <= jitter_ms <= delay_ms")
        self.upstream = upstream
        # clients outside this network (e.g. the study's server, which uses the same TURN URL)
        # pass unimpaired and uncounted: the impairment is the participant's access network
        self.impaired = ipaddress.ip_network(impair_only) if impair_only else None
        self.delay_s, self.jitter_s, self.loss = delay_ms / 1000, jitter_ms / 1000, loss
        self.random = {d: random.Random(f"{seed}:{d}") for d in (UPSTREAM, DOWNSTREAM)}
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.listener.bind(listen)
        self.listener.setblocking(False)
        self.address = self.listener.getsockname()
        self.clients: dict[tuple[str, int], socket.socket] = {}  # client address -> its upstream socket
        self.client_of: dict[socket.socket, tuple[str, int]] = {}
        self.last_due = {UPSTREAM: 0.0, DOWNSTREAM: 0.0}
        self.queue: list = []  # (due, sequence, socket, data, address): a heap
        self.sequence = 0
        self._counts = {d: _Tally() for d in (UPSTREAM, DOWNSTREAM)}
        self.dropped_sequence = {UPSTREAM: [], DOWNSTREAM: []}  # index within its direction
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._wake_r, self._wake_w = socket.socketpair()
        self._thread: threading.Thread | None = None

    def start(self) -> "ImpairmentRelay":
        self._thread = threading.Thread(target=self.run, name="udp-impairment", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._wake_w.send(b"x")
        if self._thread is not None:
            self._thread.join(timeout=5)

    def counts(self) -> dict[str, Direction]:
        with self._lock:
            return {d: tally.report() for d, tally in self._counts.items()}

    def _admit(self, direction: str, now: float, out: socket.socket, data: bytes, address, client) -> None:
        if self.impaired is not None and ipaddress.ip_address(client[0]) not in self.impaired:
            self.sequence += 1
            heapq.heappush(self.queue, (now, self.sequence, out, data, address, None))
            return
        draw = self.random[direction]
        lost = draw.random() < self.loss
        jitter = draw.uniform(-self.jitter_s, self.jitter_s)  # drawn for every datagram: same seed, same draws
        ssrc = rtp_ssrc(data)
        with self._lock:
            tally = self._counts[direction]
            index = tally.received
            tally.received += 1
            if ssrc is not None:
                stream = tally.rtp_streams.setdefault(str(ssrc), [0, 0])
                stream[0] += 1
                stream[1] += lost
                if lost:
                    tally.rtp_dropped_at.append(time.time())
            if lost:
                tally.dropped += 1
                self.dropped_sequence[direction].append(index)
                return
        due = max(now + self.delay_s + jitter, self.last_due[direction])
        self.last_due[direction] = due
        self.sequence += 1
        heapq.heappush(self.queue, (due, self.sequence, out, data, address, direction))

    def run(self) -> None:
        selector = selectors.DefaultSelector()
        selector.register(self.listener, selectors.EVENT_READ, None)
        selector.register(self._wake_r, selectors.EVENT_READ, "wake")
        try:
            while not self._stop.is_set():
                now = time.monotonic()
                while self.queue and self.queue[0][0] <= now:
                    _, _, out, data, address, direction = heapq.heappop(self.queue)
                    try:
                        out.sendto(data, address)
                        if direction is not None:
                            with self._lock:
                                self._counts[direction].sent += 1
                    except OSError:
                        pass  # an unreachable client: as a network would, lose it
                timeout = max(0.0, self.queue[0][0] - time.monotonic()) if self.queue else None
                for key, _ in selector.select(timeout):
                    if key.data == "wake":
                        self._wake_r.recv(64)
                        continue
                    sock = key.fileobj
                    while True:
                        try:
                            data, address = sock.recvfrom(MAX_DATAGRAM)
                        except (BlockingIOError, InterruptedError):
                            break
                        except OSError:  # e.g. ICMP port unreachable reported on the next read
                            break
                        arrived = time.monotonic()
                        if sock is self.listener:
                            upstream = self.clients.get(address)
                            if upstream is None:
                                upstream = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                                upstream.bind((self.address[0], 0))
                                upstream.setblocking(False)
                                self.clients[address] = upstream
                                self.client_of[upstream] = address
                                selector.register(upstream, selectors.EVENT_READ, "upstream")
                            self._admit(UPSTREAM, arrived, upstream, data, self.upstream, address)
                        else:
                            client = self.client_of[sock]
                            self._admit(DOWNSTREAM, arrived, self.listener, data, client, client)
        finally:
            selector.close()
            for sock in (self.listener, *self.clients.values(), self._wake_r, self._wake_w):
                sock.close()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.udp_impairment", description=__doc__.splitlines()[0])
    parser.add_argument("--listen", required=True, help="HOST:PORT (PORT 0: any free port)")
    parser.add_argument("--upstream", required=True, help="HOST:PORT")
    parser.add_argument("--delay-ms", type=float, default=80.0)
    parser.add_argument("--jitter-ms", type=float, default=20.0)
    parser.add_argument("--loss", type=float, default=0.02)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--impair-only", default=None, metavar="NETWORK",
                        help="impair (and count) only clients in this network, e.g. 10.0.1.0/24")
    parser.add_argument("--counts", type=Path, required=True, help="JSON file written at exit")
    args = parser.parse_args(argv)

    def address(text: str) -> tuple[str, int]:
        host, _, port = text.rpartition(":")
        return host, int(port)

    try:
        relay = ImpairmentRelay(address(args.listen), address(args.upstream), args.delay_ms, args.jitter_ms,
                                args.loss, args.seed, args.impair_only)
    except (ValueError, OSError) as e:
        print(f"udp_impairment: {e}", file=sys.stderr)
        return 2
    stopped = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopped.set())
    signal.signal(signal.SIGINT, lambda *_: stopped.set())
    relay.start()
    print(f"{relay.address[0]}:{relay.address[1]}", flush=True)
    while not stopped.wait(0.5):
        _write_counts(relay, args.counts)  # also while it runs: a test reads them mid-call
    relay.stop()
    _write_counts(relay, args.counts)
    return 0


def _write_counts(relay: ImpairmentRelay, path: Path) -> None:
    counts = {d: dataclasses.asdict(c) for d, c in relay.counts().items()}
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(counts))
    temporary.replace(path)


if __name__ == "__main__":
    sys.exit(main())

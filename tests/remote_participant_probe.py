"""What a remote participant's machine finds when it reaches a deployed server, run inside the
participant's network namespace of tests/test_deploy_guide.py (a separate process: a thread of
the test could join the namespace too, but the probes want their own event loop and resolver).

    python -m tests.remote_participant_probe < probes.json  ->  results.json on stdout

probes.json: {"turn": [{"host", "port", "transport": "udp"|"tcp"|"tls", "username", "credential",
"cafile"}], "tcp": [{"host", "port"}]}. A TURN probe allocates a relay and sends a datagram through
it to a UDP echo socket of this machine, which answers the relayed address: the result is the
relayed address and whether the answer came back through the relay, or the error. A TCP probe
says "open", "refused" (the host answered: nothing listens) or "no answer" (a firewall dropped it).
"""

from __future__ import annotations

import asyncio
import json
import socket
import ssl
import sys

from aioice.turn import create_turn_endpoint

TIMEOUT_S = 5.0
ECHO_PAYLOAD = b"remote participant probe"


class Received(asyncio.DatagramProtocol):
    def __init__(self):
        self.data: asyncio.Queue = asyncio.Queue()

    def datagram_received(self, data, addr):
        self.data.put_nowait((data, addr))


class Echo(asyncio.DatagramProtocol):
    def connection_made(self, transport):
        self.transport = transport

    def datagram_received(self, data, addr):
        self.transport.sendto(data, addr)


def own_address(toward: str) -> str:
    """This machine's address on the way to `toward` (the echo socket's, as the relay sees it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect((toward, 9))
        return s.getsockname()[0]


async def turn_probe(probe: dict) -> dict:
    context = None
    if probe["transport"] == "tls":
        context = ssl.create_default_context(cafile=probe["cafile"])
    loop = asyncio.get_running_loop()
    server_ip = socket.gethostbyname(probe["host"])
    echo_transport, _ = await loop.create_datagram_endpoint(Echo, local_addr=(own_address(server_ip), 0))
    try:
        relay, received = await asyncio.wait_for(create_turn_endpoint(
            Received, (probe["host"], probe["port"]), probe["username"], probe["credential"],
            ssl=context, transport="udp" if probe["transport"] == "udp" else "tcp"), TIMEOUT_S)
    except Exception as exc:  # the result names what went wrong
        echo_transport.close()
        return {"error": f"{type(exc).__name__}: {exc}"}
    try:
        relay.sendto(ECHO_PAYLOAD, echo_transport.get_extra_info("sockname"))
        data, _ = await asyncio.wait_for(received.data.get(), TIMEOUT_S)
        return {"relayed": list(relay.get_extra_info("sockname")), "echoed": data == ECHO_PAYLOAD}
    except TimeoutError:
        return {"relayed": list(relay.get_extra_info("sockname")), "echoed": False}
    finally:
        relay.close()
        echo_transport.close()


def tcp_probe(probe: dict) -> str:
    try:
        socket.create_connection((probe["host"], probe["port"]), timeout=2.0).close()
    except ConnectionRefusedError:
        return "refused"
    except TimeoutError:
        return "no answer"
    return "open"


async def run(probes: dict) -> dict:
    turns = [await turn_probe(p) for p in probes.get("turn", [])]
    return {"turn": turns, "tcp": [tcp_probe(p) for p in probes.get("tcp", [])]}


if __name__ == "__main__":
    print(json.dumps(asyncio.run(run(json.load(sys.stdin)))))

"""Shared plumbing of the remote full-duplex systems: a WebSocket connection on its own thread.

The call's thread pushes 20 ms mic blocks (16 kHz) and pulls 20 ms output blocks; the
connection thread sends what was pushed in the protocol's framing and puts what the server sends
into the output queue. Subclasses define the protocol (`_handshake`, `_encode`, `_handle`).

`url` may list several servers of the same system: a call goes to the least busy one (ties in
turn), and to the next when a server refuses (down, or full: the served cascade's --max-calls
answers 503). How busy a server is: what it says itself (the served cascade's GET /status counts
the calls of every app process), else the calls this process has open on it. A server that accepts the connection but does not
finish its handshake within `handshake_timeout_s` (a Moshi server serves one conversation at a
time and makes the next wait) counts as refusing: the call moves on to the next one.

A connection that ends while the call runs (the server died or closed it) or a server's error
sets `failure`, the reason; the call (studies.webrtc, studies.offline_call) then ends as failed
and keeps what it recorded.
"""

from __future__ import annotations

import asyncio
import itertools
import queue
import threading
from collections import Counter
from dataclasses import dataclass
from typing import Self

import numpy as np
import websockets

from systems.base import (
    BLOCK,
    SAMPLE_RATE,
    AudioQueue,
    DialogueSystem,
    SystemError_,
)
from systems.events import EventKind
from systems.settings import settings_from_config

# scipy.signal is imported where it is used: it takes about a second, which most commands never need.


class StreamResampler:
    """Block-wise polyphase resampling with carried-over filter context (no clicks at block edges)."""

    def __init__(self, from_rate: int, to_rate: int, context: int = 64):
        from math import gcd

        from scipy.signal import resample_poly

        self._resample_poly = resample_poly  # looked up once, not on every 20 ms block
        g = gcd(from_rate, to_rate)
        self.up, self.down = to_rate // g, from_rate // g
        self.context = context * self.down  # input samples kept from the previous block
        self._history = np.zeros(self.context, dtype=np.float32)

    def __call__(self, samples: np.ndarray) -> np.ndarray:
        joined = np.concatenate([self._history, np.asarray(samples, dtype=np.float32)])
        out = self._resample_poly(joined, self.up, self.down)
        skip = self.context * self.up // self.down
        self._history = joined[-self.context:]
        return out[skip:].astype(np.float32)


_open_calls: Counter = Counter()  # url -> calls of this process connected to it
_open_lock = threading.Lock()
_turns = itertools.count()


def servers_in_order(urls: list[str], reported: dict[str, dict] | None = None) -> list[str]:
    """`urls`, least busy first, ties in turn. `reported`: {url: the server's own status} for the
    servers that told (calls, max_calls); a full one goes last; the others are counted by the
    calls this process has open on them."""
    reported = reported or {}

    def busy(url: str) -> tuple[bool, int]:
        status = reported.get(url)
        if status is None:
            return False, _open_calls[url]
        full = status.get("max_calls") is not None and status["calls"] >= status["max_calls"]
        return full, status["calls"]

    with _open_lock:
        k = next(_turns) % len(urls)
        rotated = urls[k:] + urls[:k]
        return sorted(rotated, key=busy)


@dataclass(frozen=True)
class ServerSettings:
    """What every remote system's settings hold: where its servers are."""

    url: str | list[str] | None = None  # ws:// or wss:// address of the server, or a list of servers (required)

    @classmethod
    def from_config(cls, config: dict) -> Self:
        settings = settings_from_config(cls, config)
        urls = settings.urls
        if (not isinstance(urls, list) or not urls
                or not all(isinstance(url, str) and url.startswith(("ws://", "wss://")) for url in urls)):
            raise SystemError_(f"config 'url' must be a ws:// or wss:// address (or a list of them), got {settings.url!r}")
        return settings

    @property
    def urls(self) -> list[str]:
        return [self.url] if isinstance(self.url, str) else self.url


class WebSocketSystem(DialogueSystem):
    """A remote system over a WebSocket; `url` in the config (plus protocol-specific keys)."""

    remote_rate = 24000
    connect_timeout_s = 10.0
    handshake_timeout_s = 3.0  # a busy server's wait for its lock is not worth more

    def __init__(self, config: dict, on_event=None, settings=None):
        super().__init__(config, on_event, settings)
        self.urls = list(self.settings.urls)
        self.url = self.urls[0]  # the server connected to, once connected
        self.out = AudioQueue()
        self._to_remote = StreamResampler(SAMPLE_RATE, self.remote_rate)
        self._from_remote = StreamResampler(self.remote_rate, SAMPLE_RATE)
        self._outgoing: queue.Queue = queue.Queue()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._connected = threading.Event()
        self._closing = False

    def start(self, topic: str = "") -> None:
        super().start(topic)
        self._thread = threading.Thread(target=self._run, name=f"{type(self).__name__}-ws", daemon=True)
        self._thread.start()
        most_s = (self.connect_timeout_s + self.handshake_timeout_s) * len(self.urls)
        if not self._connected.wait(most_s) or self.failure:
            self.close()
            raise SystemError_(self.failure or f"{self.url}: no connection within {most_s:.0f} s")

    def receive(self, block: np.ndarray) -> None:
        if self._loop is not None and not self._closing:
            self._outgoing.put(self._to_remote(block))

    def send(self) -> np.ndarray | None:
        return self.out.take(BLOCK)

    def close(self) -> None:
        self._closing = True
        self._outgoing.put(None)
        if self._thread is not None:
            self._thread.join(timeout=5)

    def fail(self, reason: str) -> None:
        """The call cannot go on (the first reason holds); the connection's reader stops."""
        if self.failure is None and not self._closing:
            self.failure = reason
            self.emit(EventKind.ERROR, message=reason)
        self._outgoing.put(None)  # wakes the sender, which closes the connection

    def play(self, samples_remote_rate: np.ndarray) -> int:
        """Queue audio received from the server (at remote_rate); returns the samples queued (16 kHz)."""
        samples = self._from_remote(samples_remote_rate)
        self.out.put(samples)
        return len(samples)

    # the connection thread

    def _run(self) -> None:
        self._loop = asyncio.new_event_loop()
        try:
            self._loop.run_until_complete(self._session())
        except SystemError_ as e:  # no server took the call, or its handshake was wrong
            self.fail(str(e))
        except Exception as e:  # protocol errors
            self.fail(f"{self.url}: {type(e).__name__}: {e}")
        finally:
            self._connected.set()
            self._loop.close()

    async def _connect(self):
        """A connection to the first server in `servers_in_order` that takes the call and finishes
        its handshake."""
        failures = []
        reported = await self._server_status() if len(self.urls) > 1 else {}
        for url in servers_in_order(self.urls, reported):
            try:
                ws = await websockets.connect(url, additional_headers=self._headers(), max_size=None,
                                              open_timeout=self.connect_timeout_s)
            except (OSError, TimeoutError, websockets.InvalidHandshake, websockets.InvalidURI) as e:
                failures.append(f"{url}: {type(e).__name__}: {e}")
                continue
            self.url = url
            try:
                await asyncio.wait_for(self._handshake(ws), self.handshake_timeout_s)
            except (TimeoutError, websockets.ConnectionClosed) as e:
                ws.transport.abort()  # a busy server does not read: a closing handshake would wait for it
                why = (f"no handshake within {self.handshake_timeout_s:g} s (busy?)" if isinstance(e, TimeoutError)
                       else f"closed before its handshake ({e})")
                failures.append(f"{url}: {why}")
                continue
            except BaseException:
                await ws.close()
                raise
            return ws
        raise SystemError_("; ".join(failures))

    async def _session(self) -> None:
        ws = await self._connect()
        with _open_lock:
            _open_calls[self.url] += 1
        try:
            async with ws:
                await self._talk(ws)
        finally:
            with _open_lock:
                _open_calls[self.url] -= 1

    async def _talk(self, ws) -> None:
        self._connected.set()
        self.emit(EventKind.CONNECTED, url=self.url)
        reader = asyncio.ensure_future(self._read(ws))
        try:
            while True:
                samples = await asyncio.to_thread(self._outgoing.get)
                if samples is None or reader.done():
                    break
                for message in self._encode(samples):
                    await ws.send(message)
        except websockets.ConnectionClosed as e:  # the sender can be first to find the server gone
            self._ended_mid_call(e)
        finally:
            reader.cancel()

    async def _read(self, ws) -> None:
        """What the server sends, until the connection ends: an end the call did not ask for is
        the call's failure."""
        try:
            async for message in ws:
                for answer in self._handle(message) or ():
                    await ws.send(answer)
        except websockets.ConnectionClosed as e:
            self._ended_mid_call(e)
        else:
            self._ended_mid_call(None)

    def _ended_mid_call(self, e: websockets.ConnectionClosed | None) -> None:
        """The call's failure when the connection ended unasked: closed cleanly (None, or a normal
        close) or broken."""
        if e is None or isinstance(e, websockets.ConnectionClosedOK):
            self.fail(f"{self.url}: the server closed the connection mid-call")
        else:
            self.fail(f"{self.url}: the connection broke mid-call ({e})")

    def _headers(self) -> dict:
        return {}

    async def _server_status(self) -> dict[str, dict]:
        """{url: status} of the servers that report how busy they are (none by default)."""
        return {}

    async def _handshake(self, ws) -> None:
        pass

    def _encode(self, samples: np.ndarray) -> list:
        raise NotImplementedError

    def _handle(self, message) -> list | None:
        """Act on one message of the server's; returns the messages to answer it with, if any."""
        raise NotImplementedError

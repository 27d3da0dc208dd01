"""A realtime system that lists several servers sends each call to the least busy one, by what the
servers report on GET /status (the calls of every app process, as `python -m studies
serve-realtime` answers it), a full server last; servers that do not say are counted by this
process's own calls."""

from __future__ import annotations

import asyncio
import json
import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from systems.realtime_client import RealtimeClient
from systems.streaming import servers_in_order
from tests.browser import free_port


@contextmanager
def status_server(status: dict, key: str | None = None):
    """An HTTP server answering GET /status with `status`, as the served cascade does (with `key`:
    only to `Authorization: Bearer KEY`, else 401)."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            if key is not None and self.headers.get("Authorization") != f"Bearer {key}":
                self.send_response(401)
                self.end_headers()
                return
            body = json.dumps(status).encode() if self.path == "/status" else b""
            self.send_response(200 if body else 404)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"ws://127.0.0.1:{server.server_address[1]}/v1/realtime"
    finally:
        server.shutdown()
        server.server_close()


def test_calls_go_to_the_server_with_the_fewest_calls_a_full_one_last():
    silent = f"ws://127.0.0.1:{free_port()}/v1/realtime"  # nothing listens: no status, no calls of ours
    with status_server({"system": "cascaded", "calls": 3, "max_calls": None, "late_blocks": 0}) as busy, \
            status_server({"system": "cascaded", "calls": 1, "max_calls": None, "late_blocks": 0}) as quiet, \
            status_server({"system": "cascaded", "calls": 2, "max_calls": 2, "late_blocks": 0}) as full:
        client = RealtimeClient({"url": [busy, full, quiet, silent]})
        reported = asyncio.run(client._server_status())
        assert reported == {busy: {"calls": 3, "max_calls": None}, quiet: {"calls": 1, "max_calls": None},
                            full: {"calls": 2, "max_calls": 2}}
        # The silent server counts this process's open calls (none): first; the full one last.
        assert servers_in_order(client.urls, reported) == [silent, quiet, busy, full]


def test_without_reports_the_servers_take_calls_in_turn():
    urls = [f"ws://127.0.0.1:{free_port()}/a", f"ws://127.0.0.1:{free_port()}/b"]
    firsts = {servers_in_order(urls)[0] for _ in range(4)}
    assert firsts == set(urls)


def test_the_status_request_sends_the_systems_key(monkeypatch):
    monkeypatch.setenv("TEST_REALTIME_KEY", "status-key")
    with status_server({"system": "cascaded", "calls": 1, "max_calls": 2, "late_blocks": 0}, key="status-key") as keyed:
        assert asyncio.run(RealtimeClient({"url": [keyed], "api_key_env": "TEST_REALTIME_KEY"})._server_status()) \
            == {keyed: {"calls": 1, "max_calls": 2}}
        # Without the key the server does not say (401): it is counted by this process's calls.
        assert asyncio.run(RealtimeClient({"url": [keyed]})._server_status()) == {}

"""Password guessing on the researcher login is slowed down: after MAX_PER_CLIENT failed logins
from one address, or MAX_PER_USER for one user name (from anywhere), within WINDOW_S, further
logins are answered 429 (even with the right password) until the oldest failure leaves the
window. Every failed login is logged with its user name and address.

An ASGI middleware in front of Gradio's own /login route (which checks the password): it reads
the small login form itself, with a cap, and hands it on unchanged. The failures are kept by a
store given to it (`failures`: storage.login_failures.LoginFailureLog, the shared database), so
that N app processes behind one address allow no more guesses than one. Behind the HAProxy front
of `app.py --workers`, the address is the browser's (X-Forwarded-For, trusted from 127.0.0.1).

The counting itself (`retry_after`, with its `ThrottleLimits`) serves other guarded doors too:
the study systems' realtime server slows down wrong API keys with it, failures kept in memory
(`RecentFailures`: one process answers there).
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from email.parser import BytesParser
from email.policy import HTTP
from typing import Protocol
from urllib.parse import parse_qs

import anyio

log = logging.getLogger(__name__)

WINDOW_S = 300.0
MAX_PER_CLIENT = 5
MAX_PER_USER = 20  # higher: anyone can spend it, and it locks the researcher out
MAX_FORM_BYTES = 4096


class FailureStore(Protocol):
    def record(self, client: str, user: str, at: datetime, forget_before: datetime) -> None: ...

    def recent(self, client: str, user: str, since: datetime) -> tuple[list[datetime], list[datetime]]:
        """(times from `client`, times for `user`) at or after `since`, oldest first."""


@dataclass(frozen=True)
class ThrottleLimits:
    """At most `per_client` failures from one address, and `per_user` for one user name (None: no
    limit by name), within `window_s`; past them the door waits."""

    window_s: float = WINDOW_S
    per_client: int = MAX_PER_CLIENT
    per_user: int | None = MAX_PER_USER


def retry_after(failures: FailureStore, client: str, user: str, now: datetime,
                limits: ThrottleLimits = ThrottleLimits()) -> float:
    """Seconds until an attempt of `user` from `client` is let through again (0: now)."""
    window = timedelta(seconds=limits.window_s)
    by_client, by_user = failures.recent(client, user, since=now - window)
    waits = [0.0]
    for times, limit in ((by_client, limits.per_client), (by_user, limits.per_user)):
        if limit is not None and len(times) >= limit:
            waits.append((times[-limit] + window - now).total_seconds())
    return max(waits)


class RecentFailures:
    """A FailureStore in this process's memory, for a door that one process answers. Not thread
    safe: one event loop asks it."""

    def __init__(self):
        self._by_client: dict[str, list[datetime]] = defaultdict(list)
        self._by_user: dict[str, list[datetime]] = defaultdict(list)

    def record(self, client: str, user: str, at: datetime, forget_before: datetime) -> None:
        for times in (self._by_client, self._by_user):  # forget what left the window: memory stays bounded
            for key in list(times):
                times[key] = [t for t in times[key] if t >= forget_before]
                if not times[key]:
                    del times[key]
        self._by_client[client].append(at)
        self._by_user[user].append(at)

    def recent(self, client: str, user: str, since: datetime) -> tuple[list[datetime], list[datetime]]:
        def times(table, key):
            return sorted(t for t in table.get(key, ()) if t >= since)  # oldest first, as the Protocol says
        return times(self._by_client, client), times(self._by_user, user)


class LoginThrottle:
    """`on_result(client, user, status)`, called from a thread for every login answered (200: in;
    429: throttled; else failed): the audit trail's record of logins (storage.audit_trail)."""

    def __init__(self, app, login_paths: tuple[str, ...], failures: FailureStore, on_result=None):
        self.app = app
        self.login_paths = set(login_paths)
        self.failures = failures
        self.on_result = on_result

    async def _tell(self, client: str, user: str, status: int) -> None:
        if self.on_result is not None:
            await anyio.to_thread.run_sync(self.on_result, client, user, status)

    def retry_after(self, client: str, user: str, now: datetime) -> float:
        """Seconds until a login of `user` from `client` is let through again (0: now)."""
        return retry_after(self.failures, client, user, now)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] not in self.login_paths:
            await self.app(scope, receive, send)
            return
        client = scope["client"][0] if scope.get("client") else "unknown"
        body = b""
        while True:  # the form is a few dozen bytes: read it (capped) to know the user name
            message = await receive()
            body += message.get("body", b"")
            if len(body) > MAX_FORM_BYTES:
                await _answer(send, 413, {"detail": "the login form is too large"})
                return
            if not message.get("more_body"):
                break
        user = form_user_name(body, dict(scope.get("headers") or []).get(b"content-type", b""))
        # Wall-clock time: the processes sharing the store share no monotonic clock. The store
        # is a database: asked from a thread, so the event loop goes on meanwhile.
        now = datetime.now(timezone.utc)
        wait = await anyio.to_thread.run_sync(self.retry_after, client, user, now)
        if wait > 0:
            log.warning("researcher login refused (too many failures): user %r from %s", user, client)
            await self._tell(client, user, 429)
            await _answer(send, 429, {"detail": "Too many failed logins: try again later."},
                          [(b"retry-after", str(int(wait) + 1).encode())])
            return

        replayed = False

        async def replay():
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        async def watch(message):
            if message["type"] == "http.response.start" and message["status"] != 200:
                # Stored (and logged) before the first byte of the answer: a client reads the status
                # from the headers, and its next attempt, on any process, must count this one.
                await anyio.to_thread.run_sync(self.failures.record, client, user, now,
                                               now - timedelta(seconds=WINDOW_S))
                log.warning("failed researcher login: user %r from %s (%s)", user, client, message["status"])
            if message["type"] == "http.response.start":
                await self._tell(client, user, message["status"])
            await send(message)

        await self.app(scope, replay, watch)


def form_user_name(body: bytes, content_type: bytes) -> str:
    """The `username` field of a login form, URL-encoded or multipart (Gradio's login page sends
    multipart/form-data); "" when there is none or the form cannot be read."""
    try:
        if content_type.lower().startswith(b"multipart/form-data"):
            # The standard library's MIME parser reads the form once given its content type.
            form = BytesParser(policy=HTTP).parsebytes(b"Content-Type: " + content_type + b"\r\n\r\n" + body)
            for part in form.iter_parts() if form.is_multipart() else ():
                if part.get_param("name", header="content-disposition") == "username":
                    return part.get_payload(decode=True).decode("utf-8").strip()[:100]
            return ""
        return parse_qs(body.decode("utf-8"), max_num_fields=10).get("username", [""])[0].strip()[:100]
    except (UnicodeDecodeError, ValueError, AttributeError):
        return ""


async def _answer(send, status: int, payload: dict, headers: list | None = None) -> None:
    body = json.dumps(payload).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            *(headers or [])]})
    await send({"type": "http.response.body", "body": body})

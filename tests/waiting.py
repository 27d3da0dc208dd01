"""Waiting for a condition in tests: poll it until it holds, with a deadline (never a fixed sleep);
and pacing on a schedule, for the tests where real time is what is tested."""

from __future__ import annotations

import asyncio
import time

POLL_S = 0.2


def poll(condition, timeout_s: float, poll_s: float = POLL_S):
    """The first truthy value of `condition()`, polled every `poll_s`; its last (falsy) value once
    `timeout_s` has passed."""
    deadline = time.monotonic() + timeout_s
    while not (value := condition()) and time.monotonic() < deadline:
        time.sleep(poll_s)
    return value


def wait_until(condition, timeout_s: float = 30, what: str = "", poll_s: float = POLL_S):
    """The first truthy value of `condition()`, polled every `poll_s`; AssertionError after `timeout_s`."""
    value = poll(condition, timeout_s, poll_s)
    assert value, f"timed out after {timeout_s} s waiting for {what}"
    return value


async def wait_until_async(condition, timeout_s: float = 30, what: str = "", poll_s: float = POLL_S):
    """wait_until for a coroutine function `condition` (an HTTP client asking a server, as a page does)."""
    deadline = time.monotonic() + timeout_s
    while not (value := await condition()):
        assert time.monotonic() < deadline, f"timed out after {timeout_s} s waiting for {what}"
        await asyncio.sleep(poll_s)
    return value


def sleep_until(instant: float) -> None:
    """Return at `instant` on time.monotonic() (at once if it has passed): a sender paced in real
    time, as a microphone's 20 ms packets are. Not for waiting on an event: use wait_until."""
    time.sleep(max(0.0, instant - time.monotonic()))


async def sleep_until_async(instant: float) -> None:
    """sleep_until on an event loop."""
    await asyncio.sleep(max(0.0, instant - time.monotonic()))

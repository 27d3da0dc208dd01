"""Waiting for a condition in tests: poll it until it holds, with a deadline (never a fixed sleep)."""

from __future__ import annotations

import time

POLL_S = 0.2


def wait_until(condition, timeout_s: float = 30, what: str = ""):
    """The first truthy value of `condition()`, polled every POLL_S; AssertionError after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while not (value := condition()):
        assert time.monotonic() < deadline, f"timed out after {timeout_s} s waiting for {what}"
        time.sleep(POLL_S)
    return value

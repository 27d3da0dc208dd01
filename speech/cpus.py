"""How many CPUs this process may keep busy: its threads (Silero's channels, the ASR's batches)
follow it, so that Ray workers given one CPU each do not both run two threads on two cores."""

from __future__ import annotations

import os


def usable_cpus() -> int:
    """OMP_NUM_THREADS when set (Ray sets it to a task's CPUs), else the machine's cores."""
    try:
        return max(1, int(os.environ["OMP_NUM_THREADS"]))
    except (KeyError, ValueError):
        return os.cpu_count() or 1

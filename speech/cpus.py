"""How many CPUs this process may keep busy: its threads (Silero's channels, the ASR's batches)
follow it, so that Ray workers given one CPU each do not both run two threads on two cores."""

from __future__ import annotations

import contextlib
import os


def usable_cpus() -> int:
    """OMP_NUM_THREADS when set (Ray sets it to a task's CPUs), else the machine's cores."""
    try:
        return max(1, int(os.environ["OMP_NUM_THREADS"]))
    except (KeyError, ValueError):
        return os.cpu_count() or 1


@contextlib.contextmanager
def torch_threads(n: int):
    """torch's CPU threads set to `n` while the block runs (the judge is small and sequential: one
    thread is faster than two fighting for 2 cores)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)

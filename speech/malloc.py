"""Keep freed memory in the process instead of handing it back to the system at once.

glibc serves every allocation above 128 KB-32 MB with a fresh `mmap` and unmaps it on `free`, so
each big temporary array (a block of VAD frames, a batch of log-mel features, the model's own
buffers) is paid again in page faults: 2.3 million of them, 7 s of system time, for one hour of
two-channel audio through `stats`. Raising the mmap and trim thresholds lets the heap reuse those
pages; the process then keeps its peak memory until it exits, which suits a one-shot command.
"""

from __future__ import annotations

import ctypes
import ctypes.util

M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD = -1, -2, -3  # glibc's malloc.h
MAX_INT = 2**31 - 1


def keep_freed_memory(top_pad: int = 256 << 20) -> bool:
    """Tell glibc's malloc to reuse freed memory (True), or do nothing where it is not glibc (False)."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError, TypeError):
        return False
    return all(mallopt(option, value) == 1 for option, value in (
        (M_MMAP_THRESHOLD, 1 << 30), (M_TRIM_THRESHOLD, MAX_INT), (M_TOP_PAD, top_pad)))

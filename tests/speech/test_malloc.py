import subprocess
import sys

import pytest

from speech.malloc import keep_freed_memory

# Allocates and frees a 64 MB array 10 times and prints the page faults that cost.
CHURN = """
import resource, sys
import numpy as np
from speech.malloc import keep_freed_memory
if sys.argv[1] == "keep":
    assert keep_freed_memory()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(10):
    a = np.ones(16 << 20, dtype=np.float32)
    del a
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def page_faults(mode: str) -> int:
    done = subprocess.run([sys.executable, "-c", CHURN, mode], capture_output=True, text=True, check=True)
    return int(done.stdout)


def test_freed_memory_is_reused_instead_of_faulted_in_again():
    if not keep_freed_memory():
        pytest.fail("glibc's mallopt is not reachable through ctypes on this Linux machine")
    # By default every new array is faulted in again (numpy asks for huge pages where it can, so
    # the count is below one per 4 KB page); kept, only the first one is: ~10 times fewer here.
    default, kept = page_faults("default"), page_faults("keep")
    assert kept * 5 <= default, (kept, default)

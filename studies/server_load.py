"""How far behind real time this server is during a call: the event loop's lateness and the CPU its
thread waited for. A call's system audio leaves late when the loop is late, whatever the network;
telling the two apart keeps the server's shortfall from being blamed on the participant's network
(studies.call_quality), and keeps a new call out while the calls running are already late
(studies.call_slots: `WaitingRoom(admits=...)`).

Each call measures, once a second (studies.webrtc):

    loop_lag_ms   how much later than asked its one-second sleep ended: time the event loop, which
                  paces every call's audio, was busy elsewhere or not running at all
    cpu_wait      the share of that second the loop's thread spent runnable but waiting for a CPU
                  (Linux's run delay, /proc/thread-self/schedstat): the machine short of CPU,
                  as when other processes take the cores; None where the kernel does not say
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

SCHEDSTAT = Path("/proc/thread-self/schedstat")
# A new call is not admitted while a running call's loop was this late in its last seconds, or its
# thread waited this share of them for a CPU: studies.webrtc counts a system block as late past
# 60 ms, and a loop that is 40 ms late each second is one burst away from it.
ADMIT_LAG_MS = 40.0
ADMIT_CPU_WAIT = 0.25
RECENT_SAMPLES = 3


def run_delay_s() -> float | None:
    """Seconds this thread has spent runnable but waiting for a CPU, since it started; None where
    the kernel keeps no scheduler statistics."""
    try:
        return int(SCHEDSTAT.read_text().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return None


@dataclass
class LoadMeter:
    """One call's load samples, taken on its event loop's thread."""

    _last_wall: float | None = None
    _last_delay: float | None = None
    recent: deque = field(default_factory=lambda: deque(maxlen=RECENT_SAMPLES))

    def sample(self, loop_lag_s: float) -> dict:
        """This second's figures, for the call's network log: {"loop_lag_ms", "cpu_wait"}."""
        wall, delay = time.monotonic(), run_delay_s()
        cpu_wait = None
        if delay is not None and self._last_delay is not None and wall > self._last_wall:
            cpu_wait = round(min(max((delay - self._last_delay) / (wall - self._last_wall), 0.0), 1.0), 3)
        self._last_wall, self._last_delay = wall, delay
        figures = {"loop_lag_ms": round(max(loop_lag_s, 0.0) * 1000.0, 1), "cpu_wait": cpu_wait}
        self.recent.append(figures)
        return figures

    def behind(self) -> bool:
        """Whether the call's last seconds say the server is behind real time."""
        return any(f["loop_lag_ms"] > ADMIT_LAG_MS or (f["cpu_wait"] or 0.0) > ADMIT_CPU_WAIT for f in self.recent)

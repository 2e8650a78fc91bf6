"""How busy this process is: CPU seconds (every thread, user + system) per wall second, as a
share of one core (2.0: two cores busy), over windows of at least `min_interval_s`."""

from __future__ import annotations

import time


class CpuMeter:
    """`share()`: the share over the last completed window (None before the first one ends)."""

    def __init__(self, *, min_interval_s: float = 2.0) -> None:
        self._min_interval_s = min_interval_s
        self._cpu = time.process_time()
        self._wall = time.monotonic()
        self._last: float | None = None

    def share(self) -> float | None:
        cpu, wall = time.process_time(), time.monotonic()
        elapsed = wall - self._wall
        if elapsed >= self._min_interval_s:
            self._last = round((cpu - self._cpu) / elapsed, 3)
            self._cpu, self._wall = cpu, wall
        return self._last

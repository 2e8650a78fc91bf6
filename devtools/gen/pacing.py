"""Keeping a producer at a target rate, with an injectable clock for tests."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

Clock = Callable[[], float]
Sleep = Callable[[float], None]


@dataclass(slots=True, kw_only=True)
class RatePacer:
    """Sleeps so that `sent` records never run ahead of `rate` records per second.

    The schedule is absolute (record n is due at start + n / rate), so sleeping late or
    sending in bursts does not accumulate drift. `rate=None` never sleeps.
    """

    rate: float | None
    clock: Clock = time.monotonic
    sleep: Sleep = time.sleep
    _started: float | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        if self.rate is not None and self.rate <= 0:
            raise ValueError(f"rate must be > 0 records/s, got {self.rate}")

    def wait_until_due(self, sent: int) -> float:
        """Block until `sent` records are allowed; returns the seconds slept."""
        now = self.clock()
        if self._started is None:
            self._started = now
        if self.rate is None:
            return 0.0
        delay = self._started + sent / self.rate - now
        if delay > 0:
            self.sleep(delay)
            return delay
        return 0.0

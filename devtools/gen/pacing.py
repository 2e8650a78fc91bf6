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
    sending in bursts does not accumulate drift. `rate=None` never sleeps. `retime` changes the
    rate from now on, from another thread too: the schedule restarts at that point, so neither
    a burst to catch up nor a pause to fall back follows.
    """

    rate: float | None
    clock: Clock = time.monotonic
    sleep: Sleep = time.sleep
    # (time, records sent then) the schedule counts from; one tuple, replaced whole by `retime`
    _anchor: tuple[float, int] | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        if self.rate is not None and self.rate <= 0:
            raise ValueError(f"rate must be > 0 records/s, got {self.rate}")

    def wait_until_due(self, sent: int) -> float:
        """Block until `sent` records are allowed; returns the seconds slept."""
        now = self.clock()
        if self._anchor is None:
            self._anchor = (now, sent)
        rate, (anchored_at, anchored_sent) = self.rate, self._anchor
        if rate is None:
            return 0.0
        delay = anchored_at + (sent - anchored_sent) / rate - now
        if delay > 0:
            self.sleep(delay)
            return delay
        return 0.0

    def retime(self, rate: float, *, sent: int) -> None:
        """`rate` records per second from now, `sent` being the records sent so far."""
        if rate <= 0:
            raise ValueError(f"rate must be > 0 records/s, got {rate}")
        self._anchor = (self.clock(), sent)
        self.rate = rate

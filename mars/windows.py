"""Window arithmetic on integer epoch milliseconds.

Windows are half-open `[start, end)`. A hopping window of `size` every `slide` starts at every
multiple of `slide` (aligned to the epoch, like Flink and Kafka Streams); tumbling windows are the
case `size == slide`. Everything here is pure integer arithmetic: Python's `//` and `%` floor, so
negative timestamps (before 1970) land in the right window. A window is closed by the watermark
plus the grace period, never by the wall clock.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from mars.tasks.spec import WindowSpec


@dataclass(frozen=True, slots=True, kw_only=True)
class WindowAssigner:
    """Assigns event times to windows and decides when a window is closed."""

    size_ms: int
    slide_ms: int
    grace_ms: int = 0

    def __post_init__(self) -> None:
        if self.size_ms <= 0 or self.slide_ms <= 0:
            raise ValueError("window size and slide must be positive")
        if self.slide_ms > self.size_ms:
            raise ValueError("window slide must not exceed its size")
        if self.grace_ms < 0:
            raise ValueError("grace must not be negative")

    @classmethod
    def from_spec(cls, spec: WindowSpec) -> WindowAssigner:
        return cls(size_ms=spec.size_ms, slide_ms=spec.slide_ms, grace_ms=spec.grace_ms)

    @property
    def tumbling(self) -> bool:
        return self.size_ms == self.slide_ms

    def last_start(self, ts_ms: int) -> int:
        """Start of the latest window containing `ts_ms`."""
        return ts_ms - ts_ms % self.slide_ms

    def first_start(self, ts_ms: int) -> int:
        """Start of the earliest window containing `ts_ms` (the smallest start > ts - size)."""
        return (ts_ms - self.size_ms) // self.slide_ms * self.slide_ms + self.slide_ms

    def window_starts(self, ts_ms: int) -> range:
        """Starts of every window containing `ts_ms`, ascending."""
        return range(self.first_start(ts_ms), self.last_start(ts_ms) + 1, self.slide_ms)

    def end(self, start_ms: int) -> int:
        return start_ms + self.size_ms

    def closes_at(self, start_ms: int) -> int:
        """The watermark at which the window starting at `start_ms` closes."""
        return start_ms + self.size_ms + self.grace_ms

    def is_closed(self, start_ms: int, watermark_ms: int | None) -> bool:
        """A window is closed when watermark >= end + grace; no watermark closes nothing."""
        return watermark_ms is not None and watermark_ms >= self.closes_at(start_ms)

    def is_late(self, ts_ms: int, stream_time_ms: int | None) -> bool:
        """A record is late when every window it belongs to is closed at `stream_time_ms`."""
        return self.is_closed(self.last_start(ts_ms), stream_time_ms)

    # Vectorised variants over a Polars column of epoch ms (Int64).

    def last_start_expr(self, ts: pl.Expr) -> pl.Expr:
        """Polars: start of the latest window containing each timestamp."""
        return (ts // self.slide_ms) * self.slide_ms

    def starts_expr(self, ts: pl.Expr) -> pl.Expr:
        """Polars: the window start (tumbling) or list of window starts (hopping) per row.

        For hopping windows `explode` the result to get one row per (record, window).
        """
        last = self.last_start_expr(ts)
        if self.tumbling:
            return last
        first = ((ts - self.size_ms) // self.slide_ms) * self.slide_ms + self.slide_ms
        return pl.int_ranges(first, last + self.slide_ms, self.slide_ms, dtype=pl.Int64)

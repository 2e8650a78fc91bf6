"""Window arithmetic on integer epoch milliseconds.

Windows are half-open `[start, end)`. A hopping window of `size` every `slide` starts at every
multiple of `slide` (aligned to the epoch, like Flink and Kafka Streams); tumbling windows are the
case `size == slide`. Everything here is pure integer arithmetic: Python's `//` and `%` floor, so
negative timestamps (before 1970) land in the right window. A window is closed by the watermark
plus the grace period, never by the wall clock.

Session windows (`SessionWindows`) are per group: records at most `gap` apart share a session
`[first, last]`, which closes when the watermark passes `last + gap + grace`. A record is late
when it is more than `grace` behind its partition's stream time (a record at the stream time
is on time): with both rules no on-time record can reach a session the reducer already
closed (docs/semantics.md).

Cumulative windows (`CumulativeWindows`, Flink's CUMULATE) are the windows `[s, s + n * step)`,
`1 <= n <= size / step`, of each epoch-aligned max window `[s, s + size)`: a record at `t` is in
every one of them ending after `t`. Each is closed like a tumbling window, at `end + grace`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

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

    def late_from_expr(self, ts: pl.Expr) -> pl.Expr:
        """Polars: the smallest stream time at which each record is late (`is_late`): its
        latest window's `end + grace`."""
        return self.last_start_expr(ts) + (self.size_ms + self.grace_ms)

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


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionWindows:
    """Session windows: decides which partial sessions merge and when a session is closed.

    A session is `[first, last]` (event times of its first and last record, both included).
    Two sessions of a group are one when they are at most `gap_ms` apart.
    """

    gap_ms: int
    grace_ms: int = 0

    def __post_init__(self) -> None:
        if self.gap_ms <= 0:
            raise ValueError("the session gap must be positive")
        if self.grace_ms < 0:
            raise ValueError("grace must not be negative")

    @classmethod
    def from_spec(cls, spec: WindowSpec) -> SessionWindows:
        return cls(gap_ms=spec.gap_ms, grace_ms=spec.grace_ms)

    def closes_at(self, last_ms: int) -> int:
        """The watermark at which a session whose last record is at `last_ms` closes: the first
        past `last + gap + grace`. A record at `last + gap` still joins it, and is on time while
        the stream time is at most `last + gap + grace`."""
        return last_ms + self.gap_ms + self.grace_ms + 1

    def is_closed(self, last_ms: int, watermark_ms: int | None) -> bool:
        return watermark_ms is not None and watermark_ms >= self.closes_at(last_ms)

    def touch(self, first_a: int, last_a: int, first_b: int, last_b: int) -> bool:
        """Whether sessions a and b are at most a gap apart (so they are one session)."""
        return first_a <= last_b + self.gap_ms and first_b <= last_a + self.gap_ms

    def is_late(self, ts_ms: int, stream_time_ms: int | None) -> bool:
        """A record (or a partial session starting at `ts_ms`) is late when it is more than
        `grace` behind `stream_time_ms`: a session it would join may be closed by then."""
        return stream_time_ms is not None and ts_ms + self.grace_ms < stream_time_ms

    def late_from_expr(self, ts: pl.Expr) -> pl.Expr:
        """Polars: the smallest stream time at which each record is late (`is_late`)."""
        return ts + (self.grace_ms + 1)


@dataclass(frozen=True, slots=True, kw_only=True)
class CumulativeWindows:
    """Cumulative windows: max windows `[s, s + size)` aligned to the epoch, each holding the
    windows `[s, s + n * step)`; `size` is a multiple of `step`.

    Partials are pre-aggregated per step *slice* `[σ, σ + step)` (σ a multiple of `step`): the
    windows ending after a slice's records are exactly those ending at `σ + step` or later in
    its max window. The window ending at `e` closes at `e + grace`.
    """

    size_ms: int
    step_ms: int
    grace_ms: int = 0

    def __post_init__(self) -> None:
        if self.step_ms <= 1 or self.size_ms <= 0:
            raise ValueError("the cumulative step must be over 1 ms and the size positive")
        if self.size_ms % self.step_ms:
            raise ValueError("the cumulative window size must be a multiple of its step")
        if self.grace_ms < 0:
            raise ValueError("grace must not be negative")

    @classmethod
    def from_spec(cls, spec: WindowSpec) -> CumulativeWindows:
        return cls(size_ms=spec.size_ms, step_ms=spec.slide_ms, grace_ms=spec.grace_ms)

    def max_start(self, ts_ms: int) -> int:
        """Start of the max window containing `ts_ms`."""
        return ts_ms - ts_ms % self.size_ms

    def slice_start(self, ts_ms: int) -> int:
        """Start of the step slice containing `ts_ms`."""
        return ts_ms - ts_ms % self.step_ms

    def window_ends(self, ts_ms: int) -> range:
        """Ends of every cumulative window containing `ts_ms`, ascending (all start at
        `max_start(ts_ms)`)."""
        return range(
            self.slice_start(ts_ms) + self.step_ms,
            self.max_start(ts_ms) + self.size_ms + 1,
            self.step_ms,
        )

    def closes_at(self, end_ms: int) -> int:
        """The watermark at which the cumulative window ending at `end_ms` closes."""
        return end_ms + self.grace_ms

    def first_open_slice(self, stream_time_ms: int) -> int:
        """The earliest slice whose window (its end) is still open at `stream_time_ms`: the
        slice of `stream_time - grace` (its end is the first end `> stream_time - grace`)."""
        return self.slice_start(stream_time_ms - self.grace_ms)

    def is_late(self, ts_ms: int, stream_time_ms: int | None) -> bool:
        """Late when every window containing `ts_ms` is closed: its max window is."""
        return stream_time_ms is not None and stream_time_ms >= self.late_from(ts_ms)

    def late_from(self, ts_ms: int) -> int:
        """The smallest stream time at which a record at `ts_ms` is late."""
        return self.max_start(ts_ms) + self.size_ms + self.grace_ms

    def running_key(self, max_start_ms: int) -> int:
        """Where a checkpoint keeps a max window's running state, beside its pending slices:
        one past its start, never a slice start (those are multiples of a step over 1 ms)."""
        return max_start_ms + 1

    def is_running_key(self, key: int) -> bool:
        return key % self.step_ms == 1

    # Vectorised variants over a Polars column of epoch ms (Int64).

    def late_from_expr(self, ts: pl.Expr) -> pl.Expr:
        """Polars: `late_from` of each timestamp."""
        return (ts // self.size_ms) * self.size_ms + (self.size_ms + self.grace_ms)

    def contribution_slice_expr(self, ts: pl.Expr, stream_time_before: pl.Expr) -> pl.Expr:
        """Polars: the slice each on-time record is counted in: its own, or the first slice still
        open at the stream time before it (`first_open_slice`), whichever is later, so it
        counts in exactly its windows still open then (as hopping windows do)."""
        own = (ts // self.step_ms) * self.step_ms
        first_open = ((stream_time_before - self.grace_ms) // self.step_ms) * self.step_ms
        return pl.max_horizontal(own, first_open.fill_null(own))


def window_end(spec: WindowSpec, start_ms: int, states: Sequence[Any]) -> int:
    """The `window_end` of a window's group: `start + size` (exclusive); for a session the
    time of its last record (inclusive), which its partial states carry last; for a cumulative
    window its end, which the reducer appends to the states it emits."""
    if spec.session or spec.cumulate:
        return int(states[-1])
    return start_ms + spec.size_ms


def window_closes_at(spec: WindowSpec, start_ms: int, states: Sequence[Any]) -> int:
    """The watermark at which the window (or session) of a group holding `states` closes."""
    if spec.session:
        return SessionWindows.from_spec(spec).closes_at(int(states[-1]))
    if spec.cumulate:
        return CumulativeWindows.from_spec(spec).closes_at(int(states[-1]))
    return WindowAssigner.from_spec(spec).closes_at(start_ms)

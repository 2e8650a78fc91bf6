"""Which bucket a (window, group) goes to, and how a running task changes its bucket count.

A group's bucket is `crc32(key) % n`, where `n` is the bucket count of the *epoch* its window
start falls in. A task starts with one epoch (the `buckets` option, from any window on); each
change adds an epoch that applies from a window start `W` on. Every (window, group) therefore
lands in exactly one bucket for its whole life, whatever the change: one unit merges all of it,
so a window closes whole and is emitted once.

`W` is chosen by Redis, atomically with the fence that makes writers switch (the
`change_layout` and `apply_batch` scripts, docs/protocol.md): `W` = the largest window start
any writer has written so far + 1, so no data set of a window from `W` on was written under
the old count, and a writer still on the old count is refused once it writes such a window.
The reducers own `unit_count` buckets: the largest count of any epoch, so the buckets of an older,
larger count keep their owner while their windows are still open.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

MAX_BUCKETS = 1024
FROM_ANY_WINDOW = -(2**53)  # the first epoch's start (exact in Lua's doubles)


@dataclass(frozen=True, slots=True, kw_only=True)
class BucketChange:
    """From window start `from_window_ms` on, groups go to `buckets` buckets."""

    from_window_ms: int
    buckets: int


@dataclass(frozen=True, slots=True, kw_only=True)
class BucketLayout:
    """The epochs of one task: `initial` buckets, then each of `changes` in order."""

    initial: int
    changes: tuple[BucketChange, ...] = ()

    @property
    def generation(self) -> int:
        """How many changes the layout has had: the fence's token in Redis."""
        return len(self.changes)

    @property
    def current(self) -> int:
        """The bucket count new windows get."""
        return self.changes[-1].buckets if self.changes else self.initial

    @property
    def current_from_ms(self) -> int:
        """The first window start of the current epoch."""
        return self.changes[-1].from_window_ms if self.changes else FROM_ANY_WINDOW

    @property
    def unit_count(self) -> int:
        """How many units (buckets) the reducers own for the task: the most any epoch has."""
        return max([self.initial, *(change.buckets for change in self.changes)])

    def buckets_at(self, window_start_ms: int) -> int:
        """The bucket count of the epoch `window_start_ms` falls in."""
        count = self.initial
        for change in self.changes:
            if window_start_ms < change.from_window_ms:
                break
            count = change.buckets
        return count

    def bucket_numbers(
        self, hashes: npt.NDArray[np.int64], window_starts: npt.NDArray[np.int64]
    ) -> npt.NDArray[np.int64]:
        """The bucket of each row: its key's crc32 modulo the count of its window's epoch."""
        if not self.changes:
            return hashes % self.initial
        froms = np.array([change.from_window_ms for change in self.changes], dtype=np.int64)
        counts = np.array([self.initial, *(c.buckets for c in self.changes)], dtype=np.int64)
        return hashes % counts[np.searchsorted(froms, window_starts, side="right")]

    def changed(self, *, from_window_ms: int, buckets: int) -> BucketLayout:
        """This layout with one more epoch (its start after every earlier one)."""
        if from_window_ms <= self.current_from_ms and self.changes:
            raise ValueError(
                f"a bucket change must start after {self.current_from_ms}, not {from_window_ms}"
            )
        change = BucketChange(from_window_ms=from_window_ms, buckets=buckets)
        return BucketLayout(initial=self.initial, changes=(*self.changes, change))

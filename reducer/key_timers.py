"""The key clocks of a `watermark = 'key'` unit and their timers: what closes a key's groups.

Per clock, its time and a min-heap of timers `(due, start, key)`: the open window or session
at `start` of `key` closes once the clock reaches `due`. A clock is per group key, or with
`key_groups = N` per key group (`mars.engine.key_groups`; its id `(group,)`), so the clocks
are O(N) however many keys: a group's clock is the largest time of any of its keys, and its
heap holds the timers of all their open groups. The set of clocks
that moved since the last `take_due` limits a step to the keys it touched (log n a timer, O(1)
the earliest), rather than a scan of every key. Timers are lazy: the owner says, when one is
met, whether its group is gone (closed, merged away) or due later (a session that grew), and a
later one is pushed again. Shared by the window and session states (`reducer.open_key_windows`,
`reducer.open_key_sessions`), as is the clocks' place in a checkpoint: a pseudo window at
`KEY_CLOCKS_START` whose groups are the clocks by id, each clock its group's last state.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from heapq import heappop, heappush
from typing import Any

from mars.aggregates import Aggregate
from mars.engine.dataset import GroupKey, OpenWindows
from mars.engine.key_groups import KEY_CLOCKS_START, clock_id

# (group key, start) -> when that group closes now; None: it is no longer open.
CurrentDue = Callable[[GroupKey, int], int | None]


@dataclass(slots=True)
class KeyTimers:
    groups: int | None = None  # key_groups; None: a clock per key
    clocks: dict[GroupKey, int] = field(default_factory=dict)  # by clock id (`clock_of`)
    _heaps: dict[GroupKey, list[tuple[int, int, int, GroupKey]]] = field(default_factory=dict)
    _moved: set[GroupKey] = field(default_factory=set)
    _pushed: Iterator[int] = field(default_factory=itertools.count)  # ties: keys don't compare

    def clock_of(self, key: GroupKey) -> GroupKey:
        """The id of the clock `key` uses: itself, or `(its key group,)`."""
        return clock_id(key, self.groups)

    def raise_clock(self, key: GroupKey, time: int | None) -> None:
        """The clock of `key` takes `time` when later (never back)."""
        self.raise_clock_of(self.clock_of(key), time)

    def raise_clock_of(self, clock_id: GroupKey, time: int | None) -> None:
        """As `raise_clock`, by clock id (a checkpoint's clocks)."""
        if time is not None and (clock_id not in self.clocks or time > self.clocks[clock_id]):
            self.clocks[clock_id] = time
            self._moved.add(clock_id)

    def passed(self, key: GroupKey, due: int) -> bool:
        """Whether the clock of `key` has reached `due`."""
        clock = self.clocks.get(self.clock_of(key))
        return clock is not None and due <= clock

    def clock(self, key: GroupKey) -> int | None:
        return self.clocks.get(self.clock_of(key))

    def push(self, key: GroupKey, due: int, start: int) -> None:
        heap = self._heaps.setdefault(self.clock_of(key), [])
        heappush(heap, (due, start, next(self._pushed), key))

    def take_due(self, current: CurrentDue) -> list[tuple[GroupKey, int]]:
        """(key, start) of the open groups whose key clock, moved since the last call, reached
        their current due, in key order (stable output); forgets the moves."""
        out: list[tuple[GroupKey, int]] = []
        for clock_key in sorted(self._moved, key=repr):
            clock = self.clocks.get(clock_key)
            if clock is not None:
                out += self._pop_through(clock_key, clock, current)
        self._moved.clear()
        return out

    def forget(self, shifted: int, current: CurrentDue) -> None:
        """The shifted watermark reached `shifted`: drop the clocks it reached (they no longer
        decide anything) and the timers of groups it closed."""
        for key in [k for k, clock in self.clocks.items() if clock <= shifted]:
            del self.clocks[key]
        for key in [k for k, heap in self._heaps.items() if heap[0][0] <= shifted]:
            self._pop_through(key, shifted, current)

    def _pop_through(
        self, clock_key: GroupKey, time: int, current: CurrentDue
    ) -> list[tuple[GroupKey, int]]:
        """Pop the timers of `clock_key` due by `time`: those of open groups due by then are
        returned, those due later pushed again, those of gone groups dropped."""
        heap = self._heaps.get(clock_key)
        out: list[tuple[GroupKey, int]] = []
        while heap and heap[0][0] <= time:
            _, start, _, key = heappop(heap)
            due = current(key, start)
            if due is None:
                continue
            if due <= time:
                out.append((key, start))
            else:
                heappush(heap, (due, start, next(self._pushed), key))
        if heap is not None and not heap:
            del self._heaps[clock_key]
        return out

    def __len__(self) -> int:
        """Timers held (stale ones included)."""
        return sum(len(heap) for heap in self._heaps.values())


def with_key_clocks(
    windows: OpenWindows, timers: KeyTimers, aggregates: tuple[Aggregate[Any], ...]
) -> OpenWindows:
    """`windows` and, at `KEY_CLOCKS_START`, the clocks by id: a checkpoint's open groups.
    The last aggregate is the key clock's (its states before it are empty)."""
    empty = [agg.initial() for agg in aggregates[:-1]]
    clocks = {saved_id: [*empty, clock] for saved_id, clock in timers.clocks.items()}
    return {**windows, KEY_CLOCKS_START: clocks} if clocks else dict(windows)


def restore_key_clocks(checkpoint: OpenWindows | None, timers: KeyTimers) -> OpenWindows:
    """A `with_key_clocks` checkpoint's open groups; its clocks go back into `timers`."""
    saved = dict(checkpoint or {})
    for saved_id, states in saved.pop(KEY_CLOCKS_START, {}).items():
        timers.raise_clock_of(saved_id, states[-1])
    return saved

"""The key clocks of a `watermark = 'key'` unit and their timers: what closes a key's groups.

Per clock (a group key), its time and a min-heap of timers `(due, start, key)`: the open
window or session at `start` of `key` closes once the clock reaches `due`. The set of clocks
that moved since the last `take_due` limits a step to the keys it touched (log n a timer, O(1)
the earliest), rather than a scan of every key. Timers are lazy: the owner says, when one is
met, whether its group is gone (closed, merged away) or due later (a session that grew), and a
later one is pushed again. Shared by the window and session states (`reducer.open_key_windows`,
`reducer.open_key_sessions`).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from heapq import heappop, heappush

from mars.engine.dataset import GroupKey

# (group key, start) -> when that group closes now; None: it is no longer open.
CurrentDue = Callable[[GroupKey, int], int | None]


@dataclass(slots=True)
class KeyTimers:
    clocks: dict[GroupKey, int] = field(default_factory=dict)
    _heaps: dict[GroupKey, list[tuple[int, int, int, GroupKey]]] = field(default_factory=dict)
    _moved: set[GroupKey] = field(default_factory=set)
    _pushed: Iterator[int] = field(default_factory=itertools.count)  # ties: keys don't compare

    def raise_clock(self, key: GroupKey, time: int | None) -> None:
        """The clock of `key` takes `time` when later (never back)."""
        if time is not None and (key not in self.clocks or time > self.clocks[key]):
            self.clocks[key] = time
            self._moved.add(key)

    def passed(self, key: GroupKey, due: int) -> bool:
        """Whether the clock of `key` has reached `due`."""
        clock = self.clocks.get(key)
        return clock is not None and due <= clock

    def push(self, key: GroupKey, due: int, start: int) -> None:
        heappush(self._heaps.setdefault(key, []), (due, start, next(self._pushed), key))

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

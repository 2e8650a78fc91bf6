"""Open windows of a `watermark = 'key'` task: each group's window closes on its own key clock.

A key clock at the reducer is the largest event time of the key's merged partials (each
partial carries it as its last state, `state_aggregates`). The group of window `w` and key `k`
closes when `clock(k) >= end(w) + grace`, or when the task watermark less `key_lag` does
(`closed_watermark` holds that shifted watermark: the base class closes whole windows on it),
or by idle close (the watermark then moves with the wall clock). This never closes a group
before a mapper stops accepting records for it (docs/semantics.md, "Key watermarks"), as long
as a key's records all come from one partition.

Timers: per key a min-heap of its open windows' starts (closing order, as `end + grace` grows
with the start), and the set of keys whose clock moved since the last `close`; so a step costs
the keys it touched, not a scan of every key. Heap entries of groups closed by the watermark
are skipped when met, and a key's clock is dropped once the shifted watermark has reached it
(it no longer decides anything).

A contribution to a group whose key clock had already passed its `end + grace` before the
data set is late (it can come only from a key spread over partitions, or after an idle close).
Every step that closes a group by its key clock carries a checkpoint (`checkpoint_now`), so a
recovery never emits such a group twice; the checkpoint holds the key clocks as a pseudo
window at `KEY_CLOCKS_START` (only in the checkpoint, never among the open windows).
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mars.aggregates import Aggregate
from mars.engine.dataset import DataSet, GroupKey, OpenWindows, merge_groups
from mars.windows import WindowAssigner
from reducer.open_windows import ClosedWindow, LateContribution, OpenWindowState, check_next_dataset

KEY_CLOCKS_START = -(2**62)


@dataclass(slots=True, kw_only=True)
class OpenKeyWindowState(OpenWindowState):
    lag_ms: int = 0
    key_clocks: dict[GroupKey, int] = field(default_factory=dict)
    _timers: dict[GroupKey, list[int]] = field(default_factory=dict)
    _moved: set[GroupKey] = field(default_factory=set)
    _closed_by_key: bool = False

    @classmethod
    def starting_by_key(
        cls,
        *,
        assigner: WindowAssigner,
        aggregates: tuple[Aggregate[Any], ...],
        rseqs: Mapping[int, int],
        lag_ms: int,
        replayed_through: Mapping[int, int] | None = None,
        closed_watermark: int | None = None,
        checkpoint: OpenWindows | None = None,
    ) -> OpenKeyWindowState:
        """As `OpenWindowState.starting`; the checkpoint's key clocks come back too."""
        saved = dict(checkpoint or {})
        clocks = saved.pop(KEY_CLOCKS_START, {})
        state = cls(
            assigner=assigner,
            aggregates=aggregates,
            merged={b: r - 1 for b, r in rseqs.items()},
            replayed_through=dict(replayed_through or {}),
            closed_watermark=closed_watermark,
            lag_ms=lag_ms,
        )
        state.windows = {s: g for s, g in saved.items() if not state.is_closed(s)}
        state.key_clocks = {key: states[-1] for key, states in clocks.items()}
        for start, groups in state.windows.items():
            for key, states in groups.items():
                heapq.heappush(state._timers.setdefault(key, []), start)
                state._raise_clock(key, states[-1])
        return state

    def _raise_clock(self, key: GroupKey, time: int | None) -> None:
        if time is not None and (key not in self.key_clocks or time > self.key_clocks[key]):
            self.key_clocks[key] = time
            self._moved.add(key)

    def group_closed(self, start: int, key: GroupKey) -> bool:
        """Whether the group of window `start` and `key` is closed (by its clock or the
        shifted watermark)."""
        if self.is_closed(start):
            return True
        clock = self.key_clocks.get(key)
        return clock is not None and self.assigner.closes_at(start) <= clock

    def merge(self, bucket: int, seq: int, dataset: DataSet) -> list[LateContribution]:
        """Merge data set `seq` of `bucket`: each group judged against its key clock before the
        data set; then the clocks take the data set's key times."""
        check_next_dataset(self.merged, self.aggregates, bucket, seq, dataset)
        late: list[LateContribution] = []
        accounted = seq <= self.replayed_through.get(bucket, 0)
        latest: dict[GroupKey, int] = {}
        for start, groups in dataset.windows.items():
            open_groups: dict[GroupKey, list[Any]] = {}
            for key, states in groups.items():
                time = states[-1]
                if time is not None and (key not in latest or time > latest[key]):
                    latest[key] = time
                if not self.group_closed(start, key):
                    open_groups[key] = states
                elif not accounted:
                    late.append(
                        LateContribution.of(self.aggregates, bucket, seq, start, key, states)
                    )
            if not open_groups:
                continue
            window = self.windows.setdefault(start, {})
            for key in open_groups:
                if key not in window:
                    heapq.heappush(self._timers.setdefault(key, []), start)
            merge_groups(self.aggregates, window, open_groups)
            self._replay.merged(bucket, start, seq)
        for key, time in latest.items():
            self._raise_clock(key, time)
        self.merged[bucket] = seq
        return late

    def close(self, watermark: int | None) -> list[ClosedWindow]:
        """Close the groups whose key clock passed them, then whole windows on the watermark
        less `key_lag` (never back); in window order."""
        by_key: dict[int, dict[GroupKey, list[Any]]] = {}
        for key in sorted(self._moved, key=repr):
            timers = self._timers.get(key)
            clock = self.key_clocks.get(key)
            while timers and clock is not None and self.assigner.closes_at(timers[0]) <= clock:
                start = heapq.heappop(timers)
                groups = self.windows.get(start)
                if groups is None or key not in groups:
                    continue  # closed by the watermark already
                by_key.setdefault(start, {})[key] = groups.pop(key)
                if not groups:
                    del self.windows[start]
                    self._replay.dropped(start)
            if timers is not None and not timers:
                del self._timers[key]
        self._moved.clear()
        if by_key:
            self._closed_by_key = True
        shifted = None if watermark is None else watermark - self.lag_ms
        closed = [ClosedWindow(start=s, groups=g) for s, g in sorted(by_key.items())]
        closed += OpenWindowState.close(self, shifted)
        if self.closed_watermark is not None:
            self._forget_passed(self.closed_watermark)
        return sorted(closed, key=lambda window: window.start)

    def _forget_passed(self, shifted: int) -> None:
        """Drop clocks the shifted watermark has reached, and timers of closed windows."""
        for key in [k for k, clock in self.key_clocks.items() if clock <= shifted]:
            del self.key_clocks[key]
        for key in [k for k, t in self._timers.items() if not t or self.is_closed(t[0])]:
            timers = self._timers[key]
            while timers and self.is_closed(timers[0]):
                heapq.heappop(timers)
            if not timers:
                del self._timers[key]

    @property
    def checkpoint_now(self) -> bool:
        """A group closed by its key clock since the last checkpoint: the commit must carry a
        checkpoint without it, or a recovery would emit it again."""
        return self._closed_by_key

    def checkpointed(self) -> None:
        OpenWindowState.checkpointed(self)
        self._closed_by_key = False

    def checkpoint_windows(self) -> OpenWindows:
        """The open windows and, at `KEY_CLOCKS_START`, the key clocks (last state)."""
        empty = [agg.initial() for agg in self.aggregates[:-1]]
        clocks = {key: [*empty, clock] for key, clock in self.key_clocks.items()}
        return {**self.windows, KEY_CLOCKS_START: clocks} if clocks else dict(self.windows)

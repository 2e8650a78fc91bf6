"""Open windows of a `watermark = 'key'` task: each group's window closes on its own key clock.

A key clock at the reducer is the largest event time of the key's merged partials (each
partial carries it as its last state, `state_aggregates`). The group of window `w` and key `k`
closes when `clock(k) >= end(w) + grace`, or when the task watermark less `key_lag` does
(`closed_watermark` holds that shifted watermark: the base class closes whole windows on it),
or by idle close (the watermark then moves with the wall clock). This never closes a group
before a mapper stops accepting records for it (docs/semantics.md, "Key watermarks"), as long
as a key's records all come from one partition.

Timers (`reducer.key_timers`): per key a min-heap of its open windows' closing times, and the
set of keys whose clock moved since the last `close`; so a step costs the keys it touched, not
a scan of every key. Timers of groups closed by the watermark are skipped when met, and a key's
clock is dropped once the shifted watermark has reached it (it no longer decides anything).

A contribution to a group whose key clock had already passed its `end + grace` before the
data set is late (it can come only from a key spread over partitions, or after an idle close).
Every step that closes a group by its key clock carries a checkpoint (`checkpoint_now`), so a
recovery never emits such a group twice; the checkpoint holds the key clocks as a pseudo
window at `key_timers.KEY_CLOCKS_START` (only in the checkpoint, never among the open windows).

With `track_changes` (EMIT CHANGES) a group closed by its key clock leaves the changed groups:
its final row on the updates topic comes with its result, when its key closes it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mars.aggregates import Aggregate
from mars.engine.dataset import DataSet, GroupKey, Groups, OpenWindows
from mars.windows import WindowAssigner
from reducer.key_timers import KeyTimers, restore_key_clocks, with_key_clocks
from reducer.open_windows import ClosedWindow, LateContribution, OpenWindowState, check_next_dataset


@dataclass(slots=True, kw_only=True)
class OpenKeyWindowState(OpenWindowState):
    lag_ms: int = 0
    timers: KeyTimers = field(default_factory=KeyTimers)
    _closed_by_key: bool = False

    @classmethod
    def starting_by_key(
        cls,
        *,
        assigner: WindowAssigner,
        aggregates: tuple[Aggregate[Any], ...],
        rseqs: Mapping[int, int],
        lag_ms: int,
        key_groups: int | None = None,
        replayed_through: Mapping[int, int] | None = None,
        closed_watermark: int | None = None,
        checkpoint: OpenWindows | None = None,
        track_changes: bool = False,
    ) -> OpenKeyWindowState:
        """As `OpenWindowState.starting`; the checkpoint's key clocks come back too."""
        state = cls(
            assigner=assigner,
            aggregates=aggregates,
            merged={b: r - 1 for b, r in rseqs.items()},
            replayed_through=dict(replayed_through or {}),
            closed_watermark=closed_watermark,
            track_changes=track_changes,
            lag_ms=lag_ms,
            timers=KeyTimers(groups=key_groups),
        )
        saved = restore_key_clocks(checkpoint, state.timers)
        state.windows = {s: g for s, g in saved.items() if not state.is_closed(s)}
        for start, groups in state.windows.items():
            for key, states in groups.items():
                state.timers.push(key, assigner.closes_at(start), start)
                state.timers.raise_clock(key, states[-1])
        return state

    @property
    def key_clocks(self) -> dict[GroupKey, int]:
        return self.timers.clocks

    def _current_due(self, key: GroupKey, start: int) -> int | None:
        open_groups = self.windows.get(start)
        if open_groups is None or key not in open_groups:
            return None
        return self.assigner.closes_at(start)

    def group_closed(self, start: int, key: GroupKey) -> bool:
        """Whether the group of window `start` and `key` is closed (by its clock or the
        shifted watermark)."""
        return self.is_closed(start) or self.timers.passed(key, self.assigner.closes_at(start))

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
            if open_groups:
                self._merge_open(start, open_groups)
                self._replay.merged(bucket, start, seq)
        for key, time in latest.items():
            self.timers.raise_clock(key, time)
        self.merged[bucket] = seq
        return late

    def _merge_open(self, start: int, groups: Groups) -> None:
        """As `OpenWindowState._merge_open`, with a timer for each new group."""
        window = self.windows.get(start, {})
        closes_at = self.assigner.closes_at(start)
        for key in groups:
            if key not in window:
                self.timers.push(key, closes_at, start)
        OpenWindowState._merge_open(self, start, groups)

    def close(self, watermark: int | None) -> list[ClosedWindow]:
        """Close the groups whose key clock passed them, then whole windows on the watermark
        less `key_lag` (never back); in window order."""
        by_key: dict[int, dict[GroupKey, list[Any]]] = {}
        for key, start in self.timers.take_due(self._current_due):
            groups = self.windows.get(start)
            if groups is None or key not in groups:
                continue  # a second timer of a group closed just now
            by_key.setdefault(start, {})[key] = groups.pop(key)
            changed = self._changed.get(start)
            if changed is not None:  # EMIT CHANGES: its final row follows instead
                changed.discard(key)
                if not changed:
                    del self._changed[start]
            if not groups:
                del self.windows[start]
                self._replay.dropped(start)
        if by_key:
            self._closed_by_key = True
        shifted = None if watermark is None else watermark - self.lag_ms
        closed = [ClosedWindow(start=s, groups=g) for s, g in sorted(by_key.items())]
        closed += OpenWindowState.close(self, shifted)
        if self.closed_watermark is not None:
            self.timers.forget(self.closed_watermark, self._current_due)
        return sorted(closed, key=lambda window: window.start)

    @property
    def checkpoint_now(self) -> bool:
        """A group closed by its key clock since the last checkpoint: the commit must carry a
        checkpoint without it, or a recovery would emit it again."""
        return self._closed_by_key

    def checkpointed(self) -> None:
        OpenWindowState.checkpointed(self)
        self._closed_by_key = False

    def checkpoint_windows(self) -> OpenWindows:
        """The open windows and the key clocks (`with_key_clocks`)."""
        return with_key_clocks(self.windows, self.timers, self.aggregates)

"""The open cumulative windows of one owned unit (`WINDOWING CUMULATE <size> STEP <step>`).

The cumulative counterpart of `OpenWindowState`, with the same interface for `UnitOwner`. Pure
state, no I/O. Mappers send partials per step *slice* `[σ, σ + step)` (mars.windows
`CumulativeWindows`). Per max window `[s, s + size)` the state holds:

- the *pending* slices: merged partials of slices whose window (ending at `σ + step`) is not
  closed yet;
- the *running* state per group: the merge of every slice folded so far.

Closing at watermark W emits, for each max window and each window end `e` (a multiple of the
step, `e <= s + size`) that W closes now (`e + grace <= W`, and not closed at the previous
watermark), in ascending order: fold the pending slice `e - step` into the running state, then
one row per group of the running state, the window `[s, e)`. A group whose records all came
earlier in the max window is emitted again at every step, as Flink's CUMULATE emits every
cumulative window holding data. The work per step is O(groups with state), not O(size / step)
merges per window. A max window's state is dropped once its last window (`e = s + size`) is
closed, so the state is bounded by the open max windows.

Exactness (docs/reducer.md): mappers count a record in its slice or the first slice still open
at its partition's stream time, so without an idle close no contribution reaches a slice whose
window was emitted. One that does (an idle partition came back) is a `LateContribution` for the
windows it missed, and still folded into the running state for the windows still to come, as a
hopping contribution is merged into its open windows; to a closed max window, it is late only.
Any contribution is merged into its pending slice; `close` folds a pending slice whose window
was already emitted silently, before emitting later windows.

Recovery: a checkpoint holds the pending slices and, under `running_key(s)`, the running
states. Data sets merged since the checkpoint are replayed onto it into their pending slices,
whatever the watermark; `close` folds those of already emitted windows silently. So after the
replay each running state is again the merge of its max window's slices closed by the committed
watermark, whichever slices the old owner had folded when: folding order does not matter to a
monoid. rseq(b) is the first data set of `b` merged since the last checkpoint into a max window
still open.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from mars.aggregates import Aggregate
from mars.engine.dataset import DataSet, GroupKey, Groups, OpenWindows, merge_groups
from mars.windows import CumulativeWindows
from reducer.open_windows import (
    ClosedWindow,
    LateContribution,
    WindowGroups,
    check_next_dataset,
)
from reducer.replay_marks import ReplayMarks


@dataclass(slots=True, kw_only=True)
class OpenCumulativeState:
    """Pending slices and running states of the covered buckets' open max windows."""

    cumulate: CumulativeWindows
    aggregates: tuple[Aggregate[Any], ...]
    merged: dict[int, int]
    replayed_through: dict[int, int] = field(default_factory=dict)
    closed_watermark: int | None = None
    _pending: dict[int, dict[int, Groups]] = field(default_factory=dict)  # s -> σ -> groups
    _running: dict[int, Groups] = field(default_factory=dict)  # s -> groups
    _replay: ReplayMarks = field(default_factory=ReplayMarks)

    @classmethod
    def starting(
        cls,
        *,
        cumulate: CumulativeWindows,
        aggregates: tuple[Aggregate[Any], ...],
        rseqs: Mapping[int, int],
        replayed_through: Mapping[int, int] | None = None,
        closed_watermark: int | None = None,
        checkpoint: OpenWindows | None = None,
    ) -> OpenCumulativeState:
        """State about to replay each bucket `b` from data set `rseqs[b]` on top of the
        committed `checkpoint` (its max windows closed since then are dropped)."""
        state = cls(
            cumulate=cumulate,
            aggregates=aggregates,
            merged={b: r - 1 for b, r in rseqs.items()},
            replayed_through=dict(replayed_through or {}),
            closed_watermark=closed_watermark,
        )
        for key, groups in (checkpoint or {}).items():
            if cumulate.is_running_key(key):
                start = key - 1
                if not state._max_window_closed(start):
                    state._running[start] = dict(groups)
            else:
                start = cumulate.max_start(key)
                if not state._max_window_closed(start):
                    state._pending.setdefault(start, {})[key] = dict(groups)
        return state

    @property
    def buckets(self) -> Iterable[int]:
        return self.merged.keys()

    @property
    def windows(self) -> OpenWindows:
        """What a checkpoint saves: the pending slices by start, the running states by
        `running_key`."""
        saved: OpenWindows = {
            self.cumulate.running_key(start): groups
            for start, groups in self._running.items()
            if groups
        }
        for slices in self._pending.values():
            saved.update(slices)
        return saved

    def merge(self, bucket: int, seq: int, dataset: DataSet) -> list[LateContribution]:
        """Merge data set `seq` of `bucket` into its pending slices; return its contributions
        to windows already emitted."""
        check_next_dataset(self.merged, self.aggregates, bucket, seq, dataset)
        cumulate = self.cumulate
        late: list[LateContribution] = []
        accounted = seq <= self.replayed_through.get(bucket, 0)
        for slice_start, groups in dataset.windows.items():
            start = cumulate.max_start(slice_start)
            end = slice_start + cumulate.step_ms
            if not accounted and self._is_closed(end):
                late.extend(
                    LateContribution.of(self.aggregates, bucket, seq, start, key, [*states, end])
                    for key, states in groups.items()
                )
            if self._max_window_closed(start):
                continue
            pending = self._pending.setdefault(start, {})
            merge_groups(self.aggregates, pending.setdefault(slice_start, {}), groups)
            self._replay.merged(bucket, start, seq)
        self.merged[bucket] = seq
        return late

    def close(self, watermark: int | None) -> list[ClosedWindow]:
        """Advance `closed_watermark` to `watermark` (never back); return the cumulative
        windows it closes, each group's states followed by the window's end."""
        previous = self.closed_watermark
        if watermark is not None and (previous is None or watermark > previous):
            self.closed_watermark = watermark
        if self.closed_watermark is None:
            return []
        grace = self.cumulate.grace_ms
        emitted_through = None if previous is None else previous - grace
        closes_through = self.closed_watermark - grace
        closed: list[ClosedWindow] = []
        for start in sorted({*self._pending, *self._running}):
            closed.extend(self._close_max_window(start, emitted_through, closes_through))
        return closed

    def _close_max_window(
        self, start: int, emitted_through: int | None, closes_through: int
    ) -> list[ClosedWindow]:
        """The windows of max window `start` ending in `(emitted_through, closes_through]`."""
        step, size = self.cumulate.step_ms, self.cumulate.size_ms
        pending = self._pending.pop(start, {})
        running = self._running.pop(start, {})
        first_end = start + step
        if emitted_through is not None:  # the first end after it: a multiple of the step
            first_end = max(first_end, emitted_through - emitted_through % step + step)
        for slice_start in sorted(pending):  # windows already emitted: fold silently
            if slice_start + step < first_end:
                merge_groups(self.aggregates, running, pending.pop(slice_start))
        last_end = min(start + size, closes_through - closes_through % step)
        closed = self._emit(start, first_end, last_end, pending, running)
        if start + size <= closes_through:  # its last window is closed: drop it
            self._replay.dropped(start)
            return closed
        if pending:
            self._pending[start] = pending
        if running:
            self._running[start] = running
        return closed

    def _emit(
        self, start: int, first_end: int, last_end: int, pending: dict[int, Groups], running: Groups
    ) -> list[ClosedWindow]:
        """Fold each pending slice into `running` and emit its window, for the window ends
        `first_end`, `first_end + step`, ... `last_end` (skipping those with no data yet)."""
        step = self.cumulate.step_ms
        closed: list[ClosedWindow] = []
        end = first_end
        while end <= last_end:
            if not running:  # nothing to emit before the next pending slice's window
                if not pending:
                    break
                end = max(end, min(pending) + step)
                if end > last_end:
                    break
            slice_groups = pending.pop(end - step, None)
            if slice_groups is not None:
                merge_groups(self.aggregates, running, slice_groups)
            groups = {key: [*states, end] for key, states in running.items()}
            closed.append(ClosedWindow(start=start, groups=groups))
            end += step
        return closed

    def closes_at(self, window: WindowGroups) -> int:
        """When `window` closed: its end (every group's last state) + grace."""
        end = next(iter(window.groups.values()))[-1]
        return self.cumulate.closes_at(int(end))

    @property
    def has_changes(self) -> bool:
        return False  # EMIT CHANGES is refused for cumulative windows (mars.sql.cumulate)

    def take_changes(self) -> list[WindowGroups]:
        return []

    def take_gone(self) -> list[tuple[int, GroupKey]]:
        return []

    @property
    def needs_checkpoint(self) -> bool:
        """Some open max window holds contributions merged since the last checkpoint, or the
        last checkpoint still holds max windows dropped since."""
        return self._replay.needs_checkpoint

    @property
    def checkpoint_now(self) -> bool:
        """Never forced: late contributions are recognised again on a replay (`accounted`)."""
        return False

    def checkpointed(self) -> None:
        self._replay.checkpointed()

    def rseq(self, bucket: int) -> int:
        return self._replay.rseq(bucket, self.merged[bucket])

    def rseqs(self) -> dict[int, int]:
        return {bucket: self.rseq(bucket) for bucket in self.merged}

    def _is_closed(self, end: int) -> bool:
        """Whether the window ending at `end` is closed at the closed watermark."""
        return (
            self.closed_watermark is not None
            and self.closed_watermark >= self.cumulate.closes_at(end)
        )

    def _max_window_closed(self, start: int) -> bool:
        return self._is_closed(start + self.cumulate.size_ms)

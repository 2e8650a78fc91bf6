"""The open windows of one owned unit: merge data sets in SEQ order, close on the watermark.

Pure state, no I/O. Besides the merged partial states it tracks what the delayed SEQ commit
needs (docs/reducer.md):

- `merged[b]`: the last data set of bucket `b` merged (data sets arrive in SEQ order, no hole);
- per open window and bucket, the first data set that contributed to it since the last
  checkpoint, so `rseq(b)` = the first data set still needed to rebuild the open windows from
  that checkpoint (or `merged[b] + 1`); `checkpointed()` says the current windows are saved;
- `closed_watermark`: every window with `end + grace <= closed_watermark` is closed (emitted,
  or empty). It only moves forward;
- with `track_changes` (EMIT CHANGES), the groups of open windows that merges changed since
  `take_changes` last ran;
- with `incremental`, the groups merges changed since the last checkpoint, which a delta
  checkpoint holds (`checkpoint_delta`; mars.engine.checkpoint_chain);
- `rewinds`: the task's rewinds applied so far, `(generation, T')` (docs/rewind.md): `rewind`
  drops the open windows from `T'` on and opens the closed ones again; rows of a window from
  `T'` on carry `revision` g.

A contribution to a closed window is either already accounted for (the data set was merged
before the last committed progress: `seq <= replayed_through[b]`, dropped silently on replay)
or late (an idle partition came back after an idle close): returned as `LateContribution`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import polars as pl

from mars.aggregates import Aggregate, CountAll, wire_name
from mars.engine.columnar_layout import frame_groups
from mars.engine.dataset import (
    DataSet,
    GroupKey,
    Groups,
    OpenWindows,
    encode_dataset,
    merge_groups,
)
from mars.tasks.rewind import lowered_closed_watermark, revision_of
from mars.windows import WindowAssigner
from reducer.replay_marks import ReplayMarks
from reducer.spilled_frames import SpilledFrame

Part = TypeVar("Part")  # one window of a data set, in the form a merge takes


class DataSetOrderError(RuntimeError):
    """A data set arrived out of SEQ order: the owner's view of the bucket is broken."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LateContribution:
    """Partial states of one group for a window that was already closed."""

    bucket: int
    seq: int
    window_start: int
    key: GroupKey
    states: list[Any]
    records: int  # COUNT(*) of the partial when the task has one, else 1 (a contribution)

    @classmethod
    def of(
        cls,
        aggregates: tuple[Aggregate[Any], ...],
        bucket: int,
        seq: int,
        start: int,
        key: GroupKey,
        states: list[Any],
    ) -> LateContribution:
        count_at = next((i for i, agg in enumerate(aggregates) if isinstance(agg, CountAll)), None)
        return cls(
            bucket=bucket,
            seq=seq,
            window_start=start,
            key=key,
            states=list(states),
            records=int(states[count_at]) if count_at is not None else 1,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class WindowGroups:
    """Some or all merged groups of one window."""

    start: int
    groups: Groups


@dataclass(frozen=True, slots=True, kw_only=True)
class ClosedWindow(WindowGroups):
    """A window whose watermark passed `end + grace`, with all its merged groups: in `groups`,
    or (the columnar state's) as the rows of `frame` in `mars.engine.columnar_layout`, which
    the results are finalized from without a Python object per group (`groups` is empty), or
    as those rows in a spill file of the window's own, in hash partitions of its keys read
    back one at a time (`spilled`; `release` removes the file)."""

    frame: pl.DataFrame | None = None
    spilled: SpilledFrame | None = None

    @property
    def size(self) -> int:
        """How many groups."""
        if self.spilled is not None:
            return self.spilled.height
        return len(self.groups) if self.frame is None else self.frame.height

    def all_groups(self, aggregates: tuple[Aggregate[Any], ...]) -> Groups:
        """The groups as the Python state holds them (a frame's made into Python objects)."""
        frame = self.spilled.read() if self.spilled is not None else self.frame
        return self.groups if frame is None else frame_groups(aggregates, frame)

    def release(self) -> None:
        """Its spill file goes (the rows were read, or will never be)."""
        if self.spilled is not None:
            self.spilled.drop()


@dataclass(slots=True, kw_only=True)
class OpenWindowState:
    """Merged partials of the covered buckets of one task (one bucket, or all for top-k)."""

    assigner: WindowAssigner
    aggregates: tuple[Aggregate[Any], ...]
    merged: dict[int, int]
    replayed_through: dict[int, int] = field(default_factory=dict)
    closed_watermark: int | None = None
    windows: OpenWindows = field(default_factory=dict)
    track_changes: bool = False  # EMIT CHANGES: remember the groups each merge changed
    rewinds: tuple[tuple[int, int], ...] = ()  # applied rewinds (generation, T'), oldest first
    _replay: ReplayMarks = field(default_factory=ReplayMarks)
    _changed: dict[int, set[GroupKey]] = field(default_factory=dict)
    _rewound: bool = False  # a rewind since the last checkpoint: the next commit carries one
    incremental: bool = False  # track the groups changed since the last checkpoint (deltas)
    _dirty: dict[int, set[GroupKey]] | None = None  # None: untracked, the next one is full

    @classmethod
    def starting(
        cls,
        *,
        assigner: WindowAssigner,
        aggregates: tuple[Aggregate[Any], ...],
        rseqs: Mapping[int, int],
        replayed_through: Mapping[int, int] | None = None,
        closed_watermark: int | None = None,
        checkpoint: OpenWindows | None = None,
        track_changes: bool = False,
        rewinds: tuple[tuple[int, int], ...] = (),
        incremental: bool = False,
    ) -> OpenWindowState:
        """State about to replay each bucket `b` from data set `rseqs[b]`, on top of the
        committed `checkpoint` (its windows closed since then are dropped: they were emitted)."""
        state = cls(
            assigner=assigner,
            aggregates=aggregates,
            merged={b: r - 1 for b, r in rseqs.items()},
            replayed_through=dict(replayed_through or {}),
            closed_watermark=closed_watermark,
            track_changes=track_changes,
            rewinds=tuple(rewinds),
            incremental=incremental,
        )
        state.windows = {
            start: groups
            for start, groups in (checkpoint or {}).items()
            if not state.is_closed(start)
        }
        return state

    @property
    def buckets(self) -> Iterable[int]:
        return self.merged.keys()

    def is_closed(self, window_start: int) -> bool:
        return self.assigner.is_closed(window_start, self.closed_watermark)

    def merge(self, bucket: int, seq: int, dataset: DataSet) -> list[LateContribution]:
        """Merge data set `seq` of `bucket`; return its contributions to closed windows."""
        check_next_dataset(self.merged, self.aggregates, bucket, seq, dataset)
        windows = dataset.windows
        return self._merge_windows(bucket, seq, windows, self._merge_open, windows.__getitem__)

    def _merge_windows(
        self,
        bucket: int,
        seq: int,
        windows: Mapping[int, Part],
        merge_open: Callable[[int, Part], None],
        groups_of: Callable[[int], Groups],
    ) -> list[LateContribution]:
        """`merge` of a data set's `windows` in whatever form `merge_open` takes (Python
        groups, or a subclass's); `groups_of(start)`: a window's as Python groups (closed
        windows' late contributions)."""
        late: list[LateContribution] = []
        accounted = seq <= self.replayed_through.get(bucket, 0)
        for start, part in windows.items():
            if self.is_closed(start):
                if not accounted:
                    late.extend(
                        LateContribution.of(self.aggregates, bucket, seq, start, key, states)
                        for key, states in groups_of(start).items()
                    )
                continue
            merge_open(start, part)
            self._replay.merged(bucket, start, seq)
        self.merged[bucket] = seq
        return late

    def _merge_open(self, start: int, groups: Groups) -> None:
        """Merge a data set's `groups` into open window `start` (a subclass's storage hook)."""
        merge_groups(self.aggregates, self.windows.setdefault(start, {}), groups)
        if self.track_changes:
            self._changed.setdefault(start, set()).update(groups)
        if self._dirty is not None:
            self._dirty.setdefault(start, set()).update(groups)

    def close(self, watermark: int | None) -> list[ClosedWindow]:
        """Advance `closed_watermark` to `watermark` (never back); pop the windows it closes."""
        self.advance(watermark)
        closed = [
            self._pop_closed(start)
            for start in sorted(self._open_starts())
            if self.is_closed(start)
        ]
        for window in closed:
            self._changed.pop(window.start, None)
            if self._dirty is not None:
                self._dirty.pop(window.start, None)
            self._replay.dropped(window.start)
        return closed

    def _open_starts(self) -> Iterable[int]:
        """The open windows' starts (storage hook, as `_merge_open`)."""
        return self.windows.keys()

    def _pop_closed(self, start: int) -> ClosedWindow:
        """Take window `start` out as closed (storage hook, as `_merge_open`)."""
        return ClosedWindow(start=start, groups=self.windows.pop(start))

    def advance(self, watermark: int | None) -> None:
        """`closed_watermark` := `watermark` if that moves it forward."""
        if watermark is not None and (
            self.closed_watermark is None or watermark > self.closed_watermark
        ):
            self.closed_watermark = watermark

    @property
    def rewind_generation(self) -> int:
        """The last rewind applied (0: none)."""
        return self.rewinds[-1][0] if self.rewinds else 0

    def rewind(self, generation: int, from_window_ms: int) -> None:
        """Apply rewind `generation` (its marker merged): the open windows from
        `from_window_ms` on lose what was merged (the re-read and the live mappers bring it
        again), the closed ones open again, and the next commit carries a checkpoint."""
        for start in [start for start in self.windows if start >= from_window_ms]:
            del self.windows[start]
            self._changed.pop(start, None)
            self._replay.dropped(start)
        self.closed_watermark = lowered_closed_watermark(
            self.assigner, self.closed_watermark, from_window_ms
        )
        self.rewinds = (*self.rewinds, (generation, from_window_ms))
        self._rewound = True
        self._dirty = None  # a delta cannot drop windows: the rewind's checkpoint is full

    def revision(self, window_start: int) -> int:
        """The `revision` of the rows of the window starting at `window_start`."""
        return revision_of(self.rewinds, window_start)

    def closes_at(self, window: WindowGroups) -> int:
        """When `window` closed (its end + grace)."""
        return self.assigner.closes_at(window.start)

    @property
    def has_changes(self) -> bool:
        return bool(self._changed)

    def take_changes(self) -> list[WindowGroups]:
        """The current states of the groups merges changed since the last call, per open
        window in start order; then forgets them (`track_changes` only)."""
        changes = [
            WindowGroups(start=start, groups={key: self.windows[start][key] for key in keys})
            for start, keys in sorted(self._changed.items())
        ]
        self._changed.clear()
        return changes

    def take_gone(self) -> list[tuple[int, GroupKey]]:
        """Windows never merge into each other: nothing to delete on the updates topic."""
        return []

    @property
    def needs_checkpoint(self) -> bool:
        """Some open window holds contributions merged since the last checkpoint, or the last
        checkpoint still holds windows closed since (a new one frees their memory in Redis)."""
        return self._replay.needs_checkpoint

    @property
    def checkpoint_now(self) -> bool:
        """Whether this step's commit must carry a checkpoint whatever the interval: after a
        rewind (a committed progress that lists it must name a checkpoint taken after it, or
        a recovery would replay past its marker without applying it); otherwise never for
        windows (late contributions are recognised again on a replay)."""
        return self._rewound

    def checkpointed(self) -> None:
        """The open windows as they are now are saved: nothing merged so far needs a replay."""
        self._replay.checkpointed()
        self._rewound = False
        self._dirty = {} if self.incremental else None

    def delta_data(self) -> tuple[bytes, int] | None:
        """`checkpoint_delta` encoded (what a delta checkpoint wraps), and its groups."""
        delta = self.checkpoint_delta()
        if delta is None:
            return None
        groups = sum(len(window) for window in delta.values())
        return encode_dataset(self.aggregates, delta, canonical=False), groups

    def checkpoint_delta(self) -> OpenWindows | None:
        """The current states of the groups merges changed since the last checkpoint, per
        open window: what a delta checkpoint holds. None when they are not known (not
        `incremental`, no checkpoint written by this state yet, or a rewind since): the next
        checkpoint must be a full one."""
        if self._dirty is None:
            return None
        return {
            start: {key: self.windows[start][key] for key in keys}
            for start, keys in self._dirty.items()
        }

    def rseq(self, bucket: int) -> int:
        """The first data set of `bucket` an open window needs on top of the last checkpoint."""
        return self._replay.rseq(bucket, self.merged[bucket])

    def rseqs(self) -> dict[int, int]:
        return {bucket: self.rseq(bucket) for bucket in self.merged}


def check_next_dataset(
    merged: Mapping[int, int],
    aggregates: tuple[Aggregate[Any], ...],
    bucket: int,
    seq: int,
    dataset: DataSet,
) -> None:
    """Raise unless `seq` is the data set of `bucket` after `merged[bucket]` and carries the
    task's aggregates: merging out of order or another task's layout would corrupt state."""
    check_next_seq(merged, bucket, seq)
    names = tuple(wire_name(agg) for agg in aggregates)
    if dataset.aggregate_names != names:
        raise DataSetOrderError(
            f"bucket {bucket}: data set {seq} has aggregates {dataset.aggregate_names}, "
            f"the task has {names}"
        )


def check_next_seq(merged: Mapping[int, int], bucket: int, seq: int) -> None:
    """Raise unless `seq` is the data set of `bucket` after `merged[bucket]`."""
    if seq != merged[bucket] + 1:
        raise DataSetOrderError(
            f"bucket {bucket}: data set {seq} after {merged[bucket]} (expected next)"
        )

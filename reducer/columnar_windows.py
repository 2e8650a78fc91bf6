"""`ColumnarWindowState`: `OpenWindowState` with each open window's groups in columns.

For tumbling and hopping windows whose aggregates all have a fixed-width columnar merge
(`columnar_aggregates`) and no EMIT CHANGES (it reads single groups of open windows; a top-k
task's unit takes its top k from the closed frame): the bookkeeping (SEQ order, rseq, closed
watermark, late contributions) is `OpenWindowState`'s, through its storage hooks
(`_merge_open`, `_open_starts`, `_pop_closed`);
the groups are `ColumnarGroups` (a window turned into Python objects keeps exact results, see
there), which take an encoded data set's windows as decoded natively (`merge_encoded`, the
reducer's path: into a native group table, or as frames; `merge` of a decoded data set is the
reference and the fallback); a closed
window leaves as its frame, which its results are finalized from in columns
(`mars.engine.finalize.finalize_frame`), or a spilled one as its spill file, finalized a hash
partition at a time while its records are written; the checkpoint is Arrow IPC
(`mars.engine.columnar_checkpoint`), and with `incremental` a delta checkpoint holds each
touched window's rows merged since the last checkpoint (the groups keep hashes of the keys
they merged since; `delta_data`). `windows` stays empty: the groups are in `columns`.

With a `budget_bytes` and a `spill_folder`, `keep_within_budget` spills merged frames to disk,
the latest windows first (they close last), while the state held in memory (group tables and
frames) passes the budget;
a spilled window is written in hash partitions of its keys of about a quarter of the budget
each (`min_part_rows` rows at least), and merged and closed a partition at a time
(docs/reducer.md, "State beyond memory").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import polars as pl

from mars.aggregates import Aggregate, wire_name
from mars.engine.columnar_checkpoint import ColumnarCheckpoint, encode_columnar
from mars.engine.columnar_layout import frame_groups
from mars.engine.dataset import DataSet, Groups, OpenWindows, decode_dataset
from mars.engine.dataset_frames import dataset_windows
from mars.windows import WindowAssigner
from reducer.columnar_groups import ColumnarGroups
from reducer.open_windows import (
    ClosedWindow,
    LateContribution,
    OpenWindowState,
    WindowGroups,
    check_next_seq,
)
from reducer.spilled_frames import SpillFolder

if TYPE_CHECKING:
    from mars_native import DatasetWindow

PARTS_PER_BUDGET = 4  # a spilled window's partitions are about a quarter of the budget each


@dataclass(slots=True, kw_only=True)
class ColumnarWindowState(OpenWindowState):
    columns: dict[int, ColumnarGroups] = field(default_factory=dict)
    budget_bytes: int | None = None  # frames held in memory past this spill
    spill_folder: SpillFolder | None = None
    min_part_rows: int = 1  # the rows a spilled window's partition holds at the least

    @classmethod
    def starting_columnar(
        cls,
        *,
        assigner: WindowAssigner,
        aggregates: tuple[Aggregate[Any], ...],
        rseqs: Mapping[int, int],
        replayed_through: Mapping[int, int] | None = None,
        closed_watermark: int | None = None,
        checkpoint: OpenWindows | ColumnarCheckpoint | None = None,
        rewinds: tuple[tuple[int, int], ...] = (),
        incremental: bool = False,
        budget_bytes: int | None = None,
        spill_folder: SpillFolder | None = None,
        min_part_rows: int = 1,
    ) -> ColumnarWindowState:
        """As `OpenWindowState.starting`, from a columnar checkpoint of the task's aggregates
        or from Python groups (an older checkpoint, or one a task revision fitted)."""
        state = cls(
            assigner=assigner,
            aggregates=aggregates,
            merged={b: r - 1 for b, r in rseqs.items()},
            replayed_through=dict(replayed_through or {}),
            closed_watermark=closed_watermark,
            rewinds=tuple(rewinds),
            incremental=incremental,
            budget_bytes=budget_bytes,
            spill_folder=spill_folder,
            min_part_rows=min_part_rows,
        )
        windows: OpenWindows = {}
        if isinstance(checkpoint, ColumnarCheckpoint):
            names = tuple(wire_name(agg) for agg in aggregates)
            assert checkpoint.aggregate_names == names, "fit a revised task's checkpoint first"
            for start, frame in checkpoint.frames.items():
                if not state.is_closed(start):
                    state.columns[start] = ColumnarGroups.of_frame(
                        aggregates, frame, track_changes=incremental
                    )
            windows = checkpoint.python.windows
        elif checkpoint is not None:
            windows = checkpoint
        for start, groups in windows.items():
            if not state.is_closed(start):
                state.columns.setdefault(start, state._new_window()).merge(groups)
        return state

    def _new_window(self) -> ColumnarGroups:
        return ColumnarGroups(self.aggregates, track_changes=self.incremental)

    def _merge_open(self, start: int, groups: Groups) -> None:
        self._open_window(start).merge(groups)

    def merge_encoded(
        self, bucket: int, seq: int, data: bytes
    ) -> tuple[list[LateContribution], int] | None:
        """`merge(bucket, seq, decode_dataset(data))` with each window's groups decoded
        natively (`dataset_windows`) and merged as they are (`ColumnarGroups.merge_window`),
        and how many groups the data set holds; None when that declines (nothing merged:
        decode, fit and `merge` it). Python groups are decoded only for windows that need
        them: closed (late contributions), or fallen back."""
        windows = dataset_windows(data, self.aggregates)
        if windows is None:
            return None
        check_next_seq(self.merged, bucket, seq)  # `dataset_windows` checked the aggregates
        decoded: list[DataSet] = []

        def groups_of(start: int) -> Groups:
            if not decoded:
                decoded.append(decode_dataset(data))
            return decoded[0].windows[start]

        def merge_open(start: int, window: DatasetWindow) -> None:
            self._open_window(start).merge_window(window, lambda: groups_of(start))

        late = self._merge_windows(bucket, seq, windows, merge_open, groups_of)
        return late, sum(len(window) for window in windows.values())

    def _open_window(self, start: int) -> ColumnarGroups:
        """Open window `start`'s groups (new if none), about to take a data set's."""
        window = self.columns.get(start)
        if window is None:
            window = self.columns[start] = self._new_window()
        if self._dirty is not None:
            self._dirty.setdefault(start, set())  # the window: its groups keep their keys
        return window

    def _open_starts(self) -> Iterable[int]:
        return self.columns.keys()

    def keep_within_budget(self) -> int:
        """Spill merged frames, the latest windows first, while the state held in memory
        (group tables and frames) passes `budget_bytes`; how many windows were spilled now."""
        if self.budget_bytes is None or self.spill_folder is None:
            return 0
        held = sum(window.memory_bytes() for window in self.columns.values())
        spilled = 0
        for start in sorted(self.columns, reverse=True):
            if held <= self.budget_bytes:
                break
            freed = self.columns[start].spill(
                self.spill_folder,
                part_bytes=self.budget_bytes // PARTS_PER_BUDGET,
                min_part_rows=self.min_part_rows,
            )
            held -= freed
            spilled += freed > 0
        return spilled

    def spilled_windows(self) -> int:
        return sum(window.spilled() for window in self.columns.values())

    def release(self) -> None:
        """The owner stops: its spill files go."""
        if self.spill_folder is not None:
            self.spill_folder.close()

    def _pop_closed(self, start: int) -> ClosedWindow:
        window = self.columns.pop(start)
        window.closing()
        spilled = window.spilled_groups()
        if spilled is not None:  # finalized a partition at a time as its records are written
            return ClosedWindow(start=start, groups={}, spilled=spilled)
        frame = window.frame()
        if frame is None:  # no group, or fallen back to Python groups
            return ClosedWindow(start=start, groups=window.groups())
        return ClosedWindow(start=start, groups={}, frame=frame)

    def rewind(self, generation: int, from_window_ms: int) -> None:
        """As `OpenWindowState.rewind`, the columnar windows from `from_window_ms` dropped."""
        for start in [start for start in self.columns if start >= from_window_ms]:
            self.columns.pop(start).discard()
            self._replay.dropped(start)
        # (not `super()`: a slots dataclass is a new class, its methods' `super()` fails)
        OpenWindowState.rewind(self, generation, from_window_ms)

    def checkpointed(self) -> None:
        OpenWindowState.checkpointed(self)
        for window in self.columns.values():
            window.saved()

    def _changed_windows(self) -> dict[int, pl.DataFrame | Groups] | None:
        if self._dirty is None:
            return None
        return {start: self.columns[start].changed() for start in self._dirty}

    def checkpoint_delta(self) -> OpenWindows | None:
        """As `OpenWindowState.checkpoint_delta`, from the columns (tests: the reference)."""
        changed = self._changed_windows()
        if changed is None:
            return None
        return {
            start: part if isinstance(part, dict) else frame_groups(self.aggregates, part)
            for start, part in changed.items()
        }

    def delta_data(self) -> tuple[bytes, int] | None:
        """The groups changed since the last checkpoint as a columnar checkpoint of their own
        (what a delta wraps), and how many; None: not known, the next one must be full."""
        changed = self._changed_windows()
        if changed is None:
            return None
        frames = {s: part for s, part in changed.items() if isinstance(part, pl.DataFrame)}
        python = {s: part for s, part in changed.items() if isinstance(part, dict)}
        groups = sum(f.height for f in frames.values()) + sum(map(len, python.values()))
        return encode_columnar(self.aggregates, frames, python), groups

    def take_changes(self) -> list[WindowGroups]:
        raise NotImplementedError("EMIT CHANGES tasks keep the Python state")

    def columnar_groups(self) -> int:
        """Groups held in open windows."""
        return sum(len(window) for window in self.columns.values())

    def open_groups(self) -> OpenWindows:
        """Every open window's groups as Python objects (tests, and the reference)."""
        return {start: window.groups() for start, window in sorted(self.columns.items())}

    def checkpoint_data(self) -> bytes:
        """The open windows as a columnar checkpoint."""
        frames: dict[int, pl.DataFrame | bytes] = {}
        python: dict[int, Groups] = {}
        for start, window in self.columns.items():
            part = window.checkpoint_part()
            if part is None or isinstance(part, dict):
                python[start] = part or {}
            else:
                frames[start] = part
        return encode_columnar(self.aggregates, frames, python)

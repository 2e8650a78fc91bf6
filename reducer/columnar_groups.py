"""`ColumnarGroups`: the merged groups of one open window in columns, not Python objects.

A window's data sets, as the reducer decodes them natively (`merge_window`), are merged into a
native hash table of its groups (`mars_native.GroupTable`, native/src/group_table.rs): one
probe per row, the states merged in place, and a frame of its groups made when one is asked for
(a checkpoint, a delta of the groups changed, the close); a checkpoint's frame loads back into
one (`of_frame`). Where the table declines a data set (a column changing type, a sum that may
leave int64...: the rules below) or the window spills, its groups leave the table as the
merged frame and the window is held as frames from then on.

A frame holds one row per group: the key values in `k0..` and each aggregate's state in
fixed-width columns (`a<i>`; AVG as `a<i>s` and `a<i>n`). Data sets are appended as frames
(`merge`: built from Python groups by `groups_frame`; `merge_frame`: decoded natively into the
same frame, `mars.engine.dataset_frames`) and merged a batch at a time (concat + group_by) once
the appended rows reach the merged frame's size, so the work per group merged is a vectorised
share of one group_by and the memory stays within about twice the frame's.

The reference is the Python state (`mars.engine.dataset.merge_groups`): the columns give the
same groups and states. Where they could not, the window turns into a Python `Groups` dict for
the rest of its life (`python_groups`), so results stay exact:
- a key or state column whose values are not all of one scalar type (int, float, str, bool),
  or that changes type between data sets (SUM of ints, then of floats: Python gives a float,
  a column would cast one side). AVG's sum is the exception: its result is a float either way
  and 0 == 0.0, so ints and floats there become one float column;
- an int that may leave int64 (Python ints do not overflow), checked on the sums' absolute
  values before each merge;
- a NaN in a key or in a MIN / MAX state (Python's comparisons with NaN are not an order).
Float sums may differ from Python's left-to-right sum in the last bits (Polars sums in its
own order).

The merged frame and the frames appended since can be spilled to disk (`spill`,
`reducer.spilled_frames`) when the owner's state passes its budget, in hash partitions of the
keys: new frames are appended in memory until the next spill writes them as one more file, a
compaction merges the files and those frames a partition at a time into a new merged file, a
delta reads only the changed keys' rows from the spill files (they stay there), a checkpoint
copies the merged file's bytes, and the close hands that file over to be finalized a
partition at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import polars as pl

from mars.aggregates import Aggregate, Average, CountAll, CountNonNull, Max, Min, Sum
from mars.engine.columnar_layout import frame_groups, key_columns, state_columns
from mars.engine.dataset import GroupKey, Groups, merge_groups
from mars.engine.dataset_frames import frame_window, native_frame, window_frame
from mars.native import mars_native
from reducer.changed_keys import ChangedKeys, rows_of_changed_keys
from reducer.spilled_frames import SpilledFrame, SpillFolder

if TYPE_CHECKING:
    from mars_native import DatasetWindow, GroupTable

INT_LIMIT = float(1 << 62)  # sums of absolute values below this cannot leave int64
COMPACT_ROWS = 65_536  # appended rows that make a merge worth its group_by at the least
_PART = "\0partition"  # a row's hash partition, while a spilled window is split
MAX_PARTS = 64  # hash partitions of a spilled window, at most
Frame = TypeVar("Frame", pl.DataFrame, pl.LazyFrame)
DTYPES: dict[type, pl.DataType] = {
    int: pl.Int64(),
    float: pl.Float64(),
    str: pl.String(),
    bool: pl.Boolean(),
}


class DoesNotFit(Exception):
    """These groups cannot be held as columns exactly: the window falls back to Python."""


def columnar_aggregates(aggregates: Sequence[Aggregate[Any]]) -> bool:
    """Whether every aggregate has a fixed-width columnar merge (else: the Python state)."""
    kinds = CountAll | CountNonNull | Sum | Min | Max | Average
    return all(isinstance(agg, kinds) for agg in aggregates)


class ColumnarGroups:
    """One window's groups; `merge` a data set's groups, `groups()` them as the Python state."""

    __slots__ = (
        "_aggregates",
        "_changes",
        "_dtypes",
        "_fallback",
        "_folder",
        "_frame",
        "_part_rows",
        "_parts",
        "_pending",
        "_pending_rows",
        "_spilled",
        "_spilled_pending",
        "_table",
    )

    def __init__(
        self, aggregates: tuple[Aggregate[Any], ...], *, track_changes: bool = False
    ) -> None:
        self._aggregates = aggregates
        self._frame: pl.DataFrame | None = None
        self._spilled: SpilledFrame | None = None  # the merged frame, when on disk instead
        self._pending: list[pl.DataFrame] = []
        self._spilled_pending: list[SpilledFrame] = []  # appended frames on disk (older)
        self._folder: SpillFolder | None = None  # where the window spills, from its first spill
        self._parts = 1  # the hash partitions its spill files are written in (`_split`)
        self._part_rows = 0  # the rows a partition is meant to hold (0: never spilled)
        self._pending_rows = 0  # of the appended frames in memory and on disk
        self._dtypes: list[pl.DataType] | None = None  # the window's column types so far
        self._fallback: Groups | None = None
        self._table: GroupTable | None = None  # the groups, while it holds them
        # the keys of the groups merged since `saved` (None: not tracked)
        self._changes: ChangedKeys | None = ChangedKeys() if track_changes else None

    @classmethod
    def of_frame(
        cls, aggregates: tuple[Aggregate[Any], ...], frame: pl.DataFrame, *, track_changes: bool
    ) -> ColumnarGroups:
        """The groups of a frame in this layout (a checkpoint's), merged already: in a group
        table if it takes them (none counts as changed), else as the merged frame."""
        found = cls(aggregates, track_changes=track_changes)
        window = frame_window(aggregates, frame) if frame.height else None
        if window is not None and mars_native is not None:
            table = mars_native.GroupTable(_table_ops(aggregates))
            if table.merge(window):
                table.saved()
                found._table = table
                return found
        found._frame = frame
        found._dtypes = list(frame.dtypes)
        return found

    def __len__(self) -> int:
        if self._table is not None:
            return len(self._table)
        if self._fallback is not None:
            return len(self._fallback)
        if self._spilled is not None and not self._has_pending():
            return self._spilled.height
        frame = self.frame()
        return 0 if frame is None else frame.height

    def merge_window(self, window: DatasetWindow, groups: Callable[[], Groups]) -> None:
        """Merge a data set's groups of this window as decoded natively (`dataset_windows`):
        into the group table while it takes them, else as their frame (`merge_frame`)."""
        if len(window) == 0:
            return
        if self._table is None and self._untouched() and mars_native is not None:
            self._table = mars_native.GroupTable(_table_ops(self._aggregates))
        if self._table is not None:
            if self._table.merge(window):
                return
            self._leave_table()
        self.merge_frame(window_frame(self._aggregates, window), groups)

    def _untouched(self) -> bool:
        """Whether no group was merged as a frame or as Python groups (or spilled)."""
        return self._dtypes is None and self._fallback is None and not self._on_disk()

    def _leave_table(self) -> None:
        """The groups leave the group table as the merged frame (its changed groups noted as
        an appended frame's), for the frames to take from here."""
        table, self._table = self._table, None
        if table is None or not len(table):
            return
        self._frame = self._table_frame(table)
        self._dtypes = list(self._frame.dtypes)
        if self._changes is not None and table.changed_count():
            self._changes.appended(self._table_frame(table, changed_only=True))

    def _table_frame(self, table: GroupTable, *, changed_only: bool = False) -> pl.DataFrame:
        """The table's groups (or those changed since `saved`) as a frame of this layout."""
        rows = table.changed_count() if changed_only else len(table)
        return native_frame(self._aggregates, rows, table.columns(changed_only=changed_only))

    def merge(self, groups: Mapping[GroupKey, list[Any]]) -> None:
        """Merge a data set's groups of this window (states, not wire forms)."""
        if not groups:
            return
        self._leave_table()
        if self._fallback is None:
            try:
                frame = groups_frame(self._aggregates, groups)
            except DoesNotFit:
                self._fall_back()
            else:
                if self._appended(frame):
                    return
        assert self._fallback is not None
        merge_groups(self._aggregates, self._fallback, groups)

    def merge_frame(self, frame: pl.DataFrame, groups: Callable[[], Groups]) -> None:
        """Merge a data set's groups of this window given as the frame `groups_frame` makes
        of them (`mars.engine.dataset_frames`); `groups()` gives them as Python groups, called
        only if the window holds Python groups (it fell back, or does now)."""
        if frame.height == 0:
            return
        self._leave_table()
        if self._fallback is None and self._appended(frame):
            return
        assert self._fallback is not None
        merge_groups(self._aggregates, self._fallback, groups())

    def _appended(self, frame: pl.DataFrame) -> bool:
        """Append a data set's frame (merged at the next compaction): True; or, when its column
        types do not join the window's, turn the window into Python groups without it: False."""
        try:
            dtypes = _joined_dtypes(self._dtypes, frame)
        except DoesNotFit:
            self._fall_back()
            return False
        changes = self._changes
        # (hashes taken already are of the old types; unhashed frames are cast when hashed)
        if changes is not None and self._dtypes is not None and changes.hashed():
            width = self._key_width()
            changes.every |= dtypes[:width] != self._dtypes[:width]
        self._dtypes = dtypes
        self._pending.append(frame)
        self._pending_rows += frame.height
        if changes is not None:
            changes.appended(frame)
        if self._pending_rows >= max(self._merged_rows(), COMPACT_ROWS):
            try:
                self._compact()
            except DoesNotFit:
                self._fall_back()  # with this data set's groups: merged already
        return True

    def _hash_changes(self) -> None:
        """Hash the changed keys of the frames appended since the last call (`ChangedKeys`):
        called before the appended frames go (a compaction, a spill) and when the changes are
        read."""
        changes = self._changes
        if changes is None or not changes.has_unhashed():
            return
        changes.hash_appended(
            key_columns(self._key_width()),
            lambda key_frame: self._window_typed(key_frame, keys_only=True),
            deduplicate_rows=COMPACT_ROWS,  # (a deduplication's `unique` is worth what a merge is)
        )

    def _mostly_changed(self) -> bool:
        """Whether a window in memory had at least half its merged frame's groups changed (or
        its frame holds none yet, or every group counts as changed): its delta is then about
        the window, and compacting it (due anyway) costs less than hashing every row and
        joining them with the changed keys' hashes (at 300,000 groups a delta of most of them
        took 0.1 s). A spilled window is not read back for it."""
        if self._on_disk():
            return False
        assert self._changes is not None
        merged = self._merged_rows()
        return self._changes.every or merged == 0 or 2 * self._changes.hashed_rows >= merged

    def _merged_rows(self) -> int:
        if self._spilled is not None:
            return self._spilled.height
        return 0 if self._frame is None else self._frame.height

    def memory_bytes(self) -> int:
        """The frames held in memory (Polars' estimate): the merged one unless spilled, the
        appended ones, those whose keys are not hashed yet (the same frames until a compaction
        or spill hashes them), the hashes of changed keys."""
        appended = {id(frame) for frame in self._pending}
        changes = self._changes.frames() if self._changes is not None else []
        frames = [self._frame, *self._pending, *(f for f in changes if id(f) not in appended)]
        table = 0 if self._table is None else self._table.memory_bytes()
        return table + sum(int(frame.estimated_size()) for frame in frames if frame is not None)

    def spilled(self) -> bool:
        return bool(self.spill_paths())

    def spill_paths(self) -> list[Path]:
        """The window's spill files: the merged frame's, then the appended frames'."""
        files = [self._spilled] if self._spilled is not None else []
        return [spilled.path for spilled in [*files, *self._spilled_pending]]

    def spill(self, folder: SpillFolder, *, part_bytes: int = 0, min_part_rows: int = 1) -> int:
        """Write the merged frame, and the frames appended since as one more file, to `folder`
        in the hash partitions of their keys (`_split`: of about `part_bytes` each at the first
        spill but `min_part_rows` rows at least, at most `MAX_PARTS`), and let them go; the
        bytes of memory freed (0: nothing to spill: nothing in memory, or the window fell
        back)."""
        self._leave_table()
        merged = self._frame if self._frame is not None and self._frame.height else None
        frames = [frame for frame in [merged, *self._pending] if frame is not None]
        if not frames:
            return 0
        self._hash_changes()  # before the appended frames leave memory
        freed = sum(int(frame.estimated_size()) for frame in frames)
        if not self._part_rows:
            self._folder = folder
            rows = sum(frame.height for frame in frames)
            self._part_rows = max(min_part_rows, rows * part_bytes // max(freed, 1))
            self._parts = self._parts_for(rows)
        if merged is not None:
            self._spilled, self._frame = folder.write_parts(self._split(merged)), None
        appended = self._appended_in_memory()
        if appended is not None:  # one file: a compaction reads every file once per partition
            self._spilled_pending.append(folder.write_parts(self._split(appended)))
        self._pending = []
        return freed

    def _parts_for(self, rows: int) -> int:
        """The partitions for `rows` of about `_part_rows` each: the current count doubled until
        they fit, at most `MAX_PARTS` (a key's partition for a count is one of its partitions
        for the double: a part of the old files feeds two of the new); one without keys."""
        if not self._key_width():
            return 1
        parts = self._parts
        while parts < MAX_PARTS and rows > parts * self._part_rows:
            parts *= 2
        return parts

    def _split(self, frame: pl.DataFrame, parts: int | None = None) -> list[pl.DataFrame]:
        """`frame`'s rows in the window's types, partition by partition of `parts` (the
        window's own by default; empty ones too)."""
        parts = self._parts if parts is None else parts
        typed = self._window_typed(frame)
        if parts == 1:
            return [typed]
        keys = key_columns(self._key_width())
        found = typed.with_columns(_partition(keys, parts)).partition_by(
            _PART, as_dict=True, include_key=False
        )
        empty = typed.head(0)
        return [found.get((index,), empty) for index in range(parts)]

    def _appended_in_memory(self) -> pl.DataFrame | None:
        """The frames appended in memory as one frame in the window's types (None: none)."""
        if not self._pending:
            return None
        return pl.concat([self._window_typed(frame) for frame in self._pending])

    def discard(self) -> None:
        """The window is dropped (closed or rewound): its spill files go too."""
        self._table = None
        for spilled in [self._spilled, *self._spilled_pending]:
            if spilled is not None:
                spilled.drop()
        self._spilled, self._spilled_pending = None, []

    def _has_pending(self) -> bool:
        return bool(self._pending or self._spilled_pending)

    def _on_disk(self) -> bool:
        return self._spilled is not None or bool(self._spilled_pending)

    def _unspill(self) -> None:
        """Read the window's spilled frames back into memory (the appended ones before those
        appended since); their files go."""
        if self._spilled is not None:
            self._frame = self._spilled.read()
        self._pending = [spilled.read() for spilled in self._spilled_pending] + self._pending
        self.discard()

    def checkpoint_part(self) -> pl.DataFrame | bytes | Groups | None:
        """What a checkpoint holds of the window: its frame, or a spilled frame's IPC bytes
        as they are (merged on disk first, a partition at a time, if frames were appended
        since), or Python groups once it fell back; None: no group yet."""
        if self._table is not None:
            return self.frame()
        if self._fallback is None and self._on_disk() and self._has_pending():
            try:
                self._compact()
            except DoesNotFit:
                self._fall_back()
        if self._spilled is not None and not self._has_pending():
            return self._spilled.ipc()
        frame = self.frame()
        return self._fallback if frame is None and self._fallback is not None else frame

    def frame(self) -> pl.DataFrame | None:
        """The merged groups as one frame (None: no group yet, or the window fell back); a
        spilled frame is read back into memory."""
        if self._table is not None:
            return self._table_frame(self._table) if len(self._table) else None
        if self._fallback is not None:
            return None
        self._unspill()
        if self._pending:
            try:
                self._compact()
            except DoesNotFit:
                self._fall_back()
                return None
        return self._frame

    def closing(self) -> None:
        """The window is about to close: no delta reads its changes again, so the keys of its
        appended frames are not hashed at its last compaction, on the path to its results (a
        third of closing windows' `frame` in a profile of ten small tasks)."""
        self._changes = None

    def saved(self) -> None:
        """A checkpoint holds the groups as they are now: changes count from here."""
        if self._table is not None:
            self._table.saved()
        if self._changes is not None:
            self._changes = ChangedKeys()

    def changed(self) -> pl.DataFrame | Groups:
        """The groups merged since `saved` (or since the start), with their current states; or
        Python groups once the window fell back (then all of them: a delta may hold unchanged
        groups too, it only must not miss a changed one). A changed group's state is its row in
        the merged frame merged with its rows in the appended frames, the rows of keys whose
        hash is a changed one only (every row once a key column's type changed since `saved`:
        the hashes noted before it were of the other type): a delta costs about what changed,
        where a compaction of millions of groups at every checkpoint took seconds. The appended
        frames are filtered too: a delta leaves them appended, so after one they also hold
        groups changed before it, whose appended rows alone are not their states. Spill files
        are scanned where they are: read back and spilled again at every checkpoint, they made
        a spilling owner's checkpoints about 3x slower. When most groups changed
        (`_mostly_changed`), the window in memory is compacted and given whole."""
        assert self._changes is not None, "changes are not tracked"
        if self._table is not None:  # (a table of no group yet is not a window's layout)
            return self._table_frame(self._table, changed_only=True) if len(self._table) else {}
        if self._fallback is not None:
            return self._fallback
        self._hash_changes()
        changed = self._changes.deduplicated()
        if changed is None:
            return self._none_changed()
        if self._mostly_changed():
            frame = self.frame()  # compacted (or fallen back: then every group is a change)
            return frame if frame is not None else self._fallback or {}
        return self._changed_groups(changed)

    def _none_changed(self) -> pl.DataFrame | Groups:
        """`changed` with no change noted: no row, in the window's layout if it has one."""
        merged = self._merged_lazy()
        return {} if merged is None else self._window_typed(merged).head(0).collect()

    def _merged_lazy(self) -> pl.LazyFrame | None:
        """The merged frame, scanned where it is (spill files or memory), or None if none."""
        if self._spilled is not None:
            return self._spilled.scan()
        return None if self._frame is None else self._frame.lazy()

    def _changed_groups(self, changed: pl.DataFrame) -> pl.DataFrame | Groups:
        """`changed`: the rows of the keys whose hash is in `changed` (every row if every group
        counts as changed), merged."""
        merged = self._merged_lazy()
        appended = [
            *(spilled.scan() for spilled in self._spilled_pending),
            *map(pl.LazyFrame, self._pending),
        ]
        parts = [self._window_typed(part) for part in [merged, *appended] if part is not None]
        if not parts:
            return {}
        keys = key_columns(self._key_width())
        assert self._changes is not None
        if keys and not self._changes.every:  # (else the window's one group, changed)
            parts = [rows_of_changed_keys(part, keys, changed) for part in parts]
        # spill files are streamed through the join (a collect in memory reads each whole)
        rows = pl.concat(parts).collect(engine="streaming" if self._on_disk() else "auto")
        if not appended:  # the merged frame's rows: one per key already
            return rows
        try:
            _check_int_range(rows, state_columns(self._aggregates))
        except DoesNotFit:
            self.frame()  # compacts, or falls back (then every group is a change)
            return self.changed()
        return _merged(self._aggregates, rows)

    def _key_width(self) -> int:
        """The window's key columns (`key_width` of a frame of its layout)."""
        assert self._dtypes is not None
        return len(self._dtypes) - len(state_columns(self._aggregates))

    def _window_typed(self, part: Frame, *, keys_only: bool = False) -> Frame:
        """`part` (a frame of this window's layout, or its key columns) in the window's column
        types, which can be wider than its own: Null joins any type, and an AVG sum's ints and
        floats make floats (a key column all NULL at a compaction is Null in the merged frame,
        with ints merged since)."""
        assert self._dtypes is not None
        dtypes = self._dtypes[: self._key_width()] if keys_only else self._dtypes
        schema = part.collect_schema()
        if schema.dtypes() == dtypes:
            return part  # the usual case: a cast of every frame was a sixth of a merge's time
        return part.cast(dict(zip(schema.names(), dtypes, strict=True)))

    def python_groups(self) -> Groups | None:
        """The window's groups if it fell back to the Python state, else None."""
        return self._fallback

    def groups(self) -> Groups:
        """The groups as the Python state holds them."""
        frame = self.frame()
        if self._fallback is not None:
            return self._fallback
        return {} if frame is None else frame_groups(self._aggregates, frame)

    def spilled_groups(self) -> SpilledFrame | None:
        """For the close: the window's groups merged in a spill file of its own, its partitions
        to be read back one at a time (`SpilledFrame.part`; the caller removes the file), the
        window left empty; None when its groups are not on disk (in memory, or fallen back)."""
        if self._fallback is not None or not self._on_disk():
            return None
        if self._has_pending():
            try:
                self._compact()
            except DoesNotFit:
                self._fall_back()
                return None
        spilled, self._spilled = self._spilled, None
        return spilled

    def _compact(self) -> None:
        """Merge the appended frames into the merged one (DoesNotFit: they stay appended), on
        disk a partition at a time when the window is spilled."""
        self._hash_changes()  # before the appended frames are merged away
        if self._on_disk():
            self._compact_on_disk()
            return
        frames = [f for f in [self._frame, *self._pending] if f is not None]
        combined = pl.concat([self._window_typed(frame) for frame in frames])
        _check_int_range(combined, state_columns(self._aggregates))
        self._frame = _merged(self._aggregates, combined)
        self._pending, self._pending_rows = [], 0

    def _compact_on_disk(self) -> None:
        """`_compact` of a spilled window: its merged file and appended frames merged one
        partition at a time into a new merged file (the partitions doubled while they hold more
        than `_part_rows` each), so it holds one partition in memory, not the window."""
        assert self._folder is not None
        rows = (0 if self._spilled is None else self._spilled.height) + self._pending_rows
        parts = self._parts_for(rows)
        appended = self._appended_in_memory()  # hashed into partitions once, not per partition
        in_memory: Sequence[pl.DataFrame | None] = (
            [None] * parts if appended is None else self._split(appended, parts)
        )
        merged = self._folder.write_parts(
            self._merged_partition(index, parts, in_memory[index]) for index in range(parts)
        )
        self.discard()
        self._spilled, self._pending, self._pending_rows = merged, [], 0
        self._parts = parts

    def _merged_partition(
        self, index: int, parts: int, in_memory: pl.DataFrame | None
    ) -> pl.DataFrame:
        """Partition `index` of `parts` merged: the rows of the files' partition holding it
        (`index % _parts`: of its keys only once the partitions doubled) and `in_memory`, the
        rows of its keys appended in memory."""
        files = [spilled for spilled in [self._spilled, *self._spilled_pending] if spilled]
        frames = [self._window_typed(spilled.part(index % self._parts)) for spilled in files]
        combined = pl.concat(frames)
        if parts != self._parts:
            keys = key_columns(self._key_width())
            combined = combined.filter(_partition(keys, parts) == index)
        if in_memory is not None:
            combined = pl.concat([combined, in_memory])
        _check_int_range(combined, state_columns(self._aggregates))
        return self._window_typed(_merged(self._aggregates, combined))

    def _fall_back(self) -> None:
        self._leave_table()
        self._unspill()
        groups: Groups = {}
        for frame in [f for f in [self._frame, *self._pending] if f is not None]:
            merge_groups(self._aggregates, groups, frame_groups(self._aggregates, frame))
        self._frame, self._pending, self._pending_rows = None, [], 0
        if self._changes is not None:
            self._changes.forget_appended()
        self._fallback = groups


# How a group table merges each state column (native/src/group_table.rs).
_ADD, _ADD_NULLABLE, _ADD_RELAXED, _MIN, _MAX = range(5)


def _table_ops(aggregates: Sequence[Aggregate[Any]]) -> list[int]:
    """The group table's merge of each state column, in `state_columns`' order (`_merged`'s
    merges, the aggregates' `merge` in Python)."""
    ops: list[int] = []
    for agg in aggregates:
        if isinstance(agg, Average):
            ops += [_ADD_RELAXED, _ADD]
        elif isinstance(agg, Sum):
            ops.append(_ADD_NULLABLE)
        elif isinstance(agg, Min | Max):
            ops.append(_MIN if isinstance(agg, Min) else _MAX)
        else:
            ops.append(_ADD)
    return ops


def _partition(keys: list[str], parts: int) -> pl.Expr:
    """Which of `parts` hash partitions a row's keys fall in, the same whatever type a key
    column had when the row was written: Polars hashes a NULL by its column's type, and a key
    column of NULLs only is of type Null until other values come, so a NULL hashes as 0 here
    (and -0.0 as 0.0, as Polars groups them)."""
    hashes = [
        pl.when(pl.col(key).is_null())
        .then(pl.lit(0, pl.UInt64))
        .otherwise(pl.col(key).hash(1))
        .alias(key)
        for key in keys
    ]
    return (pl.struct(hashes).hash(seed=2) % parts).alias(_PART)


def groups_frame(
    aggregates: Sequence[Aggregate[Any]], groups: Mapping[GroupKey, list[Any]]
) -> pl.DataFrame:
    """A data set's groups of one window (not empty) as a frame of this layout, or
    DoesNotFit (the rules of the module's docstring that one data set decides)."""
    keys = list(groups)
    width = len(keys[0])
    if any(len(key) != width for key in keys):
        raise DoesNotFit("keys of different widths")
    columns: list[pl.Series] = [
        _series(name, values, nan_ok=False, relaxed=False)
        for name, values in zip(key_columns(width), zip(*keys, strict=True), strict=True)
    ]
    per_aggregate = zip(*groups.values(), strict=True)
    for i, (agg, values) in enumerate(zip(aggregates, per_aggregate, strict=True)):
        if isinstance(agg, Average):
            sums, counts = zip(*values, strict=True)
            columns.append(_series(f"a{i}s", sums, nan_ok=True, relaxed=True))
            columns.append(_series(f"a{i}n", counts, nan_ok=True, relaxed=False))
        else:
            nan_ok = not isinstance(agg, Min | Max)
            columns.append(_series(f"a{i}", values, nan_ok=nan_ok, relaxed=False))
    return pl.DataFrame(columns)


def _merged(aggregates: Sequence[Aggregate[Any]], combined: pl.DataFrame) -> pl.DataFrame:
    """One row per key: the states merged as the aggregates' `merge` does."""
    keys = key_columns(combined.width - len(state_columns(aggregates)))
    exprs: list[pl.Expr] = []
    for i, agg in enumerate(aggregates):
        column = pl.col(f"a{i}")
        if isinstance(agg, Average):
            exprs += [pl.col(f"a{i}s").sum(), pl.col(f"a{i}n").sum()]
        elif isinstance(agg, Sum):  # SUM of no values is NULL, not 0
            exprs.append(pl.when(column.count() > 0).then(column.sum()).alias(f"a{i}"))
        elif isinstance(agg, Min):
            exprs.append(column.min())
        elif isinstance(agg, Max):
            exprs.append(column.max())
        else:
            exprs.append(column.sum())
    merged = combined.group_by(keys).agg(exprs) if keys else combined.select(exprs)
    return merged.select([*keys, *state_columns(aggregates)])


def _check_int_range(combined: pl.DataFrame, names: list[str]) -> None:
    ints = [name for name in names if combined.schema[name].is_integer()]
    if not ints or combined.height == 0:
        return
    # one select for all the columns: a few Polars calls per column cost more than the sums
    totals = combined.select([pl.col(name).cast(pl.Float64).abs().sum() for name in ints])
    for name, total in zip(ints, totals.row(0), strict=True):
        if total >= INT_LIMIT:
            raise DoesNotFit(f"{name}: a sum may leave int64")


def _joined_dtypes(known: list[pl.DataType] | None, frame: pl.DataFrame) -> list[pl.DataType]:
    """The window's column types with `frame`'s: Null fits any; an AVG sum's Int64 and Float64
    make Float64; any other difference does not fit."""
    if known is None:
        return list(frame.dtypes)
    if len(known) != frame.width:
        raise DoesNotFit("keys of another width")
    joined: list[pl.DataType] = []
    for name, left, right in zip(frame.columns, known, frame.dtypes, strict=True):
        if left == right or right == pl.Null:
            joined.append(left)
        elif left == pl.Null:
            joined.append(right)
        elif name.endswith("s") and {left, right} == {pl.Int64(), pl.Float64()}:
            joined.append(pl.Float64())
        else:
            raise DoesNotFit(f"{name}: {right} after {left}")
    return joined


def _series(name: str, values: Sequence[Any], *, nan_ok: bool, relaxed: bool) -> pl.Series:
    """A column of one scalar type (None allowed; `relaxed`: ints and floats make floats), or
    DoesNotFit."""
    kinds = set(map(type, values)) - {type(None)}
    if relaxed and kinds == {int, float}:
        kinds = {float}
        values = [None if v is None else float(v) for v in values]
    if len(kinds) > 1 or not kinds <= DTYPES.keys():
        raise DoesNotFit(f"{name}: values of types {sorted(k.__name__ for k in kinds)}")
    kind = next(iter(kinds), None)
    if kind is float and not nan_ok and any(v != v for v in values if v is not None):
        raise DoesNotFit(f"{name}: NaN")
    dtype = pl.Null() if kind is None else DTYPES[kind]
    try:
        return pl.Series(name, values, dtype=dtype, strict=True)
    except (OverflowError, TypeError, ValueError, pl.exceptions.PolarsError) as exc:
        raise DoesNotFit(f"{name}: {exc}") from exc

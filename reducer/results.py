"""Result, update and late records, in the form written to Kafka.

Result record value (JSON): `task`, `window_start` / `window_end` (epoch ms),
`window_start_iso` / `window_end_iso` (ISO-8601 UTC), every output column of the task by name,
plus every group column and aggregate alias the SELECT list does not already carry.
Key (JSON): `[task, window_start, [group values...]]`, unique per window and group, so a
compacted topic keeps one record per window and group; for cumulative windows, whose windows
share their start, `[task, window_start, window_end, [group values...]]`. JSON is written by
msgspec (a window's rows are encoded on the critical path of its latency): NaN and infinities
become `null`, and values JSON has no type for are written as their `str`. A window finalized
in columns gets the same bytes built by Polars a column at a time (`results_in_columns`).

Update record (EMIT CHANGES, `mars.updates.<task>`): the same key and row plus `"final"`: false
for the current value of an open window's group, true for its final value (the same row as the
result). A session merged into another gets a tombstone (null value) under its old key.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from mars.engine.finalize import iso_utc, windows_rows
from mars.tasks.spec import TaskSpec
from mars.windows import window_end
from reducer.open_windows import LateContribution, WindowGroups
from reducer.output import OutRecord, RecordRun, ToWrite, flat_records
from reducer.results_in_columns import FrameRecords
from reducer.results_in_columns import json_bytes as _dumps
from reducer.spilled_frames import SpilledFrame

LATE_REASON = "window already closed by the reducer (its partition was idle)"
LATE_SESSION_REASON = (
    "partial session more than GRACE behind the reducer's watermark: its session may be closed "
    "(its partition was idle)"
)
LATE_CUMULATE_REASON = (
    "cumulative window already emitted by the reducer (its partition was idle): missing from "
    "the windows emitted from window_end on, counted in those not yet closed"
)


def row_keys(spec: TaskSpec, rows: Sequence[dict[str, Any]]) -> list[bytes]:
    """`[task, window_start, [group values...]]` of each row: one per window and group."""
    task, names = spec.id, [g.name for g in spec.group_keys]
    if spec.window.cumulate:
        return [
            _dumps([task, row["window_start"], row["window_end"], [row.get(n) for n in names]])
            for row in rows
        ]
    return [_dumps([task, row["window_start"], [row.get(name) for name in names]]) for row in rows]


def update_tombstone(spec: TaskSpec, start: int, key: tuple[Any, ...]) -> OutRecord:
    """Deletes a merged-away session's key from the updates topic (EMIT CHANGES)."""
    assert spec.updates_topic is not None
    return OutRecord(topic=spec.updates_topic, key=_dumps([spec.id, start, list(key)]), value=None)


def result_records(spec: TaskSpec, rows: Sequence[dict[str, Any]]) -> list[OutRecord]:
    """The result topic's records of `rows` (a closed window's thousands: one pass each)."""
    topic = spec.output_topic
    return [
        OutRecord(topic=topic, key=key, value=_dumps(row))
        for key, row in zip(row_keys(spec, rows), rows, strict=True)
    ]


ROWS_PER_SLICE = 2_000  # rows made into records at a time (memory, not speed)


@dataclass(frozen=True, slots=True)
class SpilledOutputs:
    """A spilled window's result rows, `rows` of them, finalized a hash partition of its groups
    at a time as they are iterated (`frames`; each partition through `finalize`), so they are
    never all in memory; the spill file goes once they were."""

    groups: SpilledFrame
    finalize: Callable[[pl.DataFrame], pl.DataFrame | None]
    rows: int

    def frames(self) -> Iterator[pl.DataFrame]:
        try:
            for index in range(self.groups.parts):
                outputs = self.finalize(self.groups.part(index))
                assert outputs is not None, "checked when the rows were counted"
                yield outputs
        finally:
            self.groups.drop()


@dataclass(frozen=True, slots=True, kw_only=True)
class FinalizedWindow:
    """A closed window's result rows in columns (`finalize_frame`): all share its start, end
    and revision (0: none)."""

    start: int
    end: int
    revision: int
    outputs: pl.DataFrame | SpilledOutputs

    @property
    def rows(self) -> int:
        return self.outputs.rows if isinstance(self.outputs, SpilledOutputs) else len(self.outputs)

    def output_frames(self) -> Iterator[pl.DataFrame]:
        """The rows, a frame at a time (one, unless spilled; a spilled window's once only)."""
        if isinstance(self.outputs, SpilledOutputs):
            yield from self.outputs.frames()
        else:
            yield self.outputs


class ResultRecords:
    """The result records of one commit's closed windows, in order: rows already made
    (`result_records`), then windows finalized in columns, whose records are made
    `ROWS_PER_SLICE` rows at a time while the transaction is written (their JSON built in
    columns, `FrameRecords`; as Python rows only for types it leaves to msgspec). So a
    window of millions of groups never exists as millions of Python rows and records at once
    (it did: about 1 KB a group of reducer memory at its close). Iterate once per
    transaction; the values of its newest `latest` records are kept meanwhile, for the REST
    list (`latest_values`)."""

    def __init__(
        self,
        spec: TaskSpec,
        made: list[OutRecord],
        finalized: Sequence[FinalizedWindow],
        *,
        latest: int = 0,
    ) -> None:
        self._spec = spec
        self._made = made
        self._finalized = list(finalized)
        self._latest = latest
        self._written: _NewestValues | None = None  # set once `to_write` was iterated through
        self.rows = len(made) + sum(window.rows for window in self._finalized)

    def __iter__(self) -> Iterator[OutRecord]:
        return flat_records(self.to_write())

    def to_write(self) -> Iterator[ToWrite]:
        """The records, a window's slice finalized in columns as one `RecordRun`."""
        yield from self._made
        newest = _NewestValues(self._latest)
        for window in self._finalized:
            for frame in window.output_frames():
                for made in self._records(window, frame):
                    newest.add(made)
                    yield from made
        self._written = newest

    def latest_values(self, count: int) -> list[bytes]:
        """The values of the last `count` records, in order (the REST list keeps those): as
        `to_write` made them when it was iterated through and kept as many (making a window's
        tail again was about 6 % of the owners' CPU with ten tasks), else made again (not a
        spilled window's, whose rows were read once: the values stop there)."""
        written = self._written
        values: list[bytes | None] = []
        if written is not None and count <= written.count:
            values = written.values(count)
        else:
            for window in reversed(self._finalized):
                missing = count - len(values)
                if missing <= 0 or isinstance(window.outputs, SpilledOutputs):
                    break
                tail = self._records(window, window.outputs.tail(missing))
                values[:0] = [record.value for made in tail for record in flat_records(made)]
        missing = count - len(values)
        if missing > 0:
            values[:0] = [record.value for record in self._made[-missing:]]
        return [value for value in values if value is not None]

    def _records(self, window: FinalizedWindow, frame: pl.DataFrame) -> Iterator[Sequence[ToWrite]]:
        """The records of `frame`'s rows, `ROWS_PER_SLICE` rows at a time."""
        spec = self._spec
        first: dict[str, Any] = {
            "task": spec.id,
            "window_start": window.start,
            "window_end": window.end,
            "window_start_iso": iso_utc(window.start),
            "window_end_iso": iso_utc(window.end),
        }
        in_columns = FrameRecords.of(spec, first, frame, window.revision)
        for start in range(0, frame.height, ROWS_PER_SLICE):
            stop = min(start + ROWS_PER_SLICE, frame.height)
            if in_columns is not None:
                keys, values = in_columns.rows(start, stop)
                yield [RecordRun(spec.output_topic, keys, values)]
                continue
            rows = [{**first, **row} for row in frame.slice(start, stop - start).to_dicts()]
            if window.revision:
                for row in rows:
                    row["revision"] = window.revision
            yield result_records(spec, rows)


class _NewestValues:
    """The values of the newest `count` records of the slices added, a slice's values at a
    time (a `RecordRun`'s list is kept, not copied)."""

    def __init__(self, count: int) -> None:
        self.count = count
        self._parts: deque[Sequence[bytes | None]] = deque()
        self._held = 0

    def add(self, made: Sequence[ToWrite]) -> None:
        if self.count <= 0:
            return
        for item in made:
            values = item.values if isinstance(item, RecordRun) else [item.value]
            self._parts.append(values)
            self._held += len(values)
        while len(self._parts) > 1 and self._held - len(self._parts[0]) >= self.count:
            self._held -= len(self._parts.popleft())

    def values(self, count: int) -> list[bytes | None]:
        """The newest `count` values held (all of them if fewer), oldest first."""
        held = [value for part in self._parts for value in part]
        return held[-count:] if count > 0 else []


def late_reason(spec: TaskSpec) -> str:
    if spec.window.session:
        return LATE_SESSION_REASON
    return LATE_CUMULATE_REASON if spec.window.cumulate else LATE_REASON


def late_record(spec: TaskSpec, late: LateContribution) -> OutRecord:
    """A late contribution for the late topic. The reducer no longer has the records' bytes,
    only the group's partial states, so it writes the group and how many records it held."""
    end = window_end(spec.window, late.window_start, late.states)
    value = {
        "task": spec.id,
        "source": "reducer",
        "reason": late_reason(spec),
        "window_start": late.window_start,
        "window_end": end,
        "window_start_iso": iso_utc(late.window_start),
        "window_end_iso": iso_utc(end),
        "group": {g.name: v for g, v in zip(spec.group_keys, late.key, strict=True)},
        "records": late.records,
        "bucket": late.bucket,
        "seq": late.seq,
    }
    key = [spec.id, late.window_start, list(late.key)]
    return OutRecord(topic=spec.late_topic, key=_dumps(key), value=_dumps(value))


def rows_of(spec: TaskSpec, windows: Sequence[WindowGroups]) -> list[dict[str, Any]]:
    """The rows of `windows` (`spec` from `result_spec`)."""
    return windows_rows(spec, [(window.start, window.groups) for window in windows])


def update_records(
    spec: TaskSpec, rows: Sequence[dict[str, Any]], *, final: bool
) -> list[OutRecord]:
    """Rows for the EMIT CHANGES updates topic: keyed like the results, marked final or not."""
    assert spec.updates_topic is not None
    topic = spec.updates_topic
    return [
        OutRecord(topic=topic, key=key, value=_dumps({**row, "final": final}))
        for key, row in zip(row_keys(spec, rows), rows, strict=True)
    ]

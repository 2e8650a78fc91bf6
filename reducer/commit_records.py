"""`commit_records`: what one commit of a unit writes to Kafka, as a pure function.

The owner sends `CommitRecords.to_write()` in ONE transaction: the closed windows' result records,
the update records (EMIT CHANGES), the late records and, last, the unit's progress record. The
progress record is built here from the previous one, so its cumulative counters grow by exactly
what the same transaction carries (exactly once: results and progress commit together or not
at all). Nothing here touches Kafka or Redis, nor the open windows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from mars.aggregates import state_aggregates
from mars.engine.columnar_layout import frame_groups
from mars.engine.dataset import GroupKey
from mars.engine.finalize import finalize_frame
from mars.tasks.spec import AggFunc, TaskSpec
from mars.windows import window_end
from reducer.open_windows import ClosedWindow, LateContribution, WindowGroups
from reducer.output import OutRecord, ToWrite, flat_records
from reducer.progress_record import COUNTER_NAMES, CheckpointRef, ProgressRecord, partition_for
from reducer.results import (
    FinalizedWindow,
    ResultRecords,
    SpilledOutputs,
    late_record,
    result_records,
    rows_of,
    update_records,
    update_tombstone,
)
from reducer.spilled_frames import SpilledFrame


@dataclass(frozen=True, slots=True, kw_only=True)
class CommitTarget:
    """Where a unit's commits go and who signs them; fixed for the owner's lifetime."""

    spec: TaskSpec
    result_spec: TaskSpec  # `result_spec(spec)`: what the rows are finalized with
    key: str  # the unit's progress key (`progress_key`)
    progress_topic: str
    progress_partitions: int
    owner: str  # member id, written into the progress record
    results_kept: int = 0  # newest result values each commit keeps for the REST list


@dataclass(frozen=True, slots=True, kw_only=True)
class UnitChanges:
    """EMIT CHANGES: the current groups of the windows that changed (empty unless the updates
    are due) and the (start, key) of the sessions merged away since the last commit."""

    changed: Sequence[WindowGroups]
    gone: Sequence[tuple[int, GroupKey]]


@dataclass(frozen=True, slots=True, kw_only=True)
class CommitRecords:
    """One commit: its records (`records()`, progress last) and what they account for."""

    results: ResultRecords  # the closed windows' result records (the REST cache keeps some)
    others: list[OutRecord]  # the update and late records, after the results
    progress_record: OutRecord
    progress: ProgressRecord

    @property
    def rows(self) -> int:
        """Result rows of the closed windows."""
        return self.results.rows

    def to_write(self) -> Iterator[ToWrite]:
        """In transaction order; the results of windows finalized in columns are made while
        this is iterated (once per transaction), a slice of a window at a time."""
        yield from self.results.to_write()
        yield from self.others
        yield self.progress_record

    def records(self) -> Iterator[OutRecord]:
        """`to_write()` one record at a time."""
        return flat_records(self.to_write())


def commit_records(
    target: CommitTarget,
    *,
    previous: ProgressRecord,
    closed: Sequence[ClosedWindow],
    late: Sequence[LateContribution],
    changes: UnitChanges | None,
    closed_watermark: int | None,
    rseqs: Mapping[int, int],
    merged: Mapping[int, int],
    checkpoints: tuple[CheckpointRef, ...],
    now: int,
    rewinds: tuple[tuple[int, int], ...] = (),
    revision: Callable[[int], int] | None = None,
) -> CommitRecords:
    """The records of one commit and the progress they move to.

    `previous` is the last committed progress; `closed_watermark`, `rseqs` and `merged` are the
    open windows' position after this step, `checkpoints` the chain the new progress names (a
    full checkpoint, then deltas; the previous chain unless this commit wrote a checkpoint);
    `changes` is None for a task without an updates topic. `rewinds` are the rewinds the open
    windows have applied, `revision` gives a window start's revision: a row of a rewound
    window carries it as `revision`.
    """
    spec, result_spec = target.spec, target.result_spec
    in_rows, in_columns = _finalize_split(result_spec, closed, revision)
    rows = rows_of(result_spec, in_rows)
    if revision is not None:
        for row in rows:
            number = revision(int(row["window_start"]))
            if number:
                row["revision"] = number
    results = ResultRecords(
        result_spec,
        result_records(result_spec, rows),
        in_columns,
        latest=target.results_kept,
    )
    counters = {name: previous.counter(name) for name in COUNTER_NAMES}
    counters["windows_emitted"] += len(closed)
    counters["results_emitted"] += results.rows
    counters["late_records"] += sum(contribution.records for contribution in late)
    counters["late_contributions"] += len(late)
    progress = ProgressRecord(
        closed_watermark=closed_watermark,
        rseqs=dict(rseqs),
        merged=dict(merged),
        counters=counters,
        checkpoint=checkpoints[-1] if checkpoints else None,
        checkpoint_base=checkpoints[:-1],
        owner=target.owner,
        committed_ms=now,
        rewinds=rewinds,
    )
    assert changes is None or not in_columns, "EMIT CHANGES tasks keep the Python state"
    updated = [] if changes is None else _update_records(result_spec, changes, rows)
    progress_record = OutRecord(
        topic=target.progress_topic,
        key=target.key.encode(),
        value=progress.to_bytes(),
        partition=partition_for(target.key, target.progress_partitions),
    )
    late_records = [late_record(spec, contribution) for contribution in late]
    return CommitRecords(
        results=results,
        others=[*updated, *late_records],
        progress_record=progress_record,
        progress=progress,
    )


def _finalize_split(
    result_spec: TaskSpec, closed: Sequence[ClosedWindow], revision: Callable[[int], int] | None
) -> tuple[list[WindowGroups], list[FinalizedWindow]]:
    """The closed windows whose rows are made as Python objects (finalized together, as one
    frame), and those finalized in columns: a frame's (the columnar state's), unless the
    columns cannot give its results exactly (`finalize_frame`); a spilled window's a partition
    at a time as its records are written (`SpilledOutputs`), unless its results need it whole
    (top-k) or not in columns: then it is read back."""
    in_rows: list[WindowGroups] = []
    in_columns: list[FinalizedWindow] = []
    for window in closed:
        outputs: pl.DataFrame | SpilledOutputs | None = None
        frame = window.frame
        if window.spilled is not None:
            outputs = _spilled_outputs(result_spec, window.start, window.spilled)
            if outputs is None:
                frame = window.spilled.read()
                window.release()
        if frame is None and outputs is None:
            in_rows.append(window)
            continue
        if outputs is None:
            assert frame is not None
            outputs = finalize_frame(result_spec, window.start, frame)
        if outputs is None:
            assert frame is not None
            groups = frame_groups(state_aggregates(result_spec), frame)
            in_rows.append(WindowGroups(start=window.start, groups=groups))
        else:
            in_columns.append(
                FinalizedWindow(
                    start=window.start,
                    end=window_end(result_spec.window, window.start, ()),
                    revision=0 if revision is None else revision(window.start),
                    outputs=outputs,
                )
            )
    return in_rows, in_columns


def _spilled_outputs(
    result_spec: TaskSpec, start: int, spilled: SpilledFrame
) -> SpilledOutputs | None:
    """A spilled window's results, to be finalized a partition at a time; None when they need
    the window whole: top-k, or a partition not exact in columns (`finalize_frame`). Without
    HAVING and AVG, a row per group; else the partitions are finalized once to count them
    (the progress carries how many results the commit emits)."""
    if result_spec.top_k is not None:
        return None

    def finalize(groups: pl.DataFrame) -> pl.DataFrame | None:
        return finalize_frame(result_spec, start, groups)

    rows = spilled.height
    averages = any(call.func == AggFunc.AVG for call in result_spec.aggregates)
    if result_spec.having is not None or averages:
        rows = 0
        for index in range(spilled.parts):
            outputs = finalize(spilled.part(index))
            if outputs is None:
                return None
            rows += outputs.height
    return SpilledOutputs(groups=spilled, finalize=finalize, rows=rows)


def _update_records(
    result_spec: TaskSpec, changes: UnitChanges, final_rows: Sequence[dict[str, Any]]
) -> list[OutRecord]:
    """For the updates topic: tombstones of the sessions merged away, the current rows of the
    changed groups, then the final rows of the closed windows."""
    deleted = [update_tombstone(result_spec, start, key) for start, key in changes.gone]
    current = update_records(result_spec, rows_of(result_spec, changes.changed), final=False)
    return deleted + current + update_records(result_spec, final_rows, final=True)

"""`commit_records`: what one commit of a unit writes to Kafka, as a pure function.

The owner sends `CommitRecords.records` in ONE transaction: the closed windows' result records,
the update records (EMIT CHANGES), the late records and, last, the unit's progress record. The
progress record is built here from the previous one, so its cumulative counters grow by exactly
what the same transaction carries (exactly once: results and progress commit together or not
at all). Nothing here touches Kafka or Redis, nor the open windows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mars.engine.dataset import GroupKey
from mars.tasks.spec import TaskSpec
from reducer.open_windows import ClosedWindow, LateContribution, WindowGroups
from reducer.output import OutRecord
from reducer.progress_record import COUNTER_NAMES, CheckpointRef, ProgressRecord, partition_for
from reducer.results import late_record, result_records, rows_of, update_records, update_tombstone


@dataclass(frozen=True, slots=True, kw_only=True)
class CommitTarget:
    """Where a unit's commits go and who signs them; fixed for the owner's lifetime."""

    spec: TaskSpec
    result_spec: TaskSpec  # `result_spec(spec)`: what the rows are finalized with
    key: str  # the unit's progress key (`progress_key`)
    progress_topic: str
    progress_partitions: int
    owner: str  # member id, written into the progress record


@dataclass(frozen=True, slots=True, kw_only=True)
class UnitChanges:
    """EMIT CHANGES: the current groups of the windows that changed (empty unless the updates
    are due) and the (start, key) of the sessions merged away since the last commit."""

    changed: Sequence[WindowGroups]
    gone: Sequence[tuple[int, GroupKey]]


@dataclass(frozen=True, slots=True, kw_only=True)
class CommitRecords:
    """One commit: `records` in transaction order (progress last) and what they account for."""

    records: list[OutRecord]
    results: list[OutRecord]  # the result records among them (the REST cache keeps them)
    rows: int  # result rows of the closed windows
    progress: ProgressRecord


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
    rows = rows_of(result_spec, closed)
    if revision is not None:
        for row in rows:
            number = revision(int(row["window_start"]))
            if number:
                row["revision"] = number
    counters = {name: previous.counter(name) for name in COUNTER_NAMES}
    counters["windows_emitted"] += len(closed)
    counters["results_emitted"] += len(rows)
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
    results = result_records(result_spec, rows)
    updated = [] if changes is None else _update_records(result_spec, changes, rows)
    progress_record = OutRecord(
        topic=target.progress_topic,
        key=target.key.encode(),
        value=progress.to_bytes(),
        partition=partition_for(target.key, target.progress_partitions),
    )
    late_records = [late_record(spec, contribution) for contribution in late]
    return CommitRecords(
        records=[*results, *updated, *late_records, progress_record],
        results=results,
        rows=len(rows),
        progress=progress,
    )


def _update_records(
    result_spec: TaskSpec, changes: UnitChanges, final_rows: Sequence[dict[str, Any]]
) -> list[OutRecord]:
    """For the updates topic: tombstones of the sessions merged away, the current rows of the
    changed groups, then the final rows of the closed windows."""
    deleted = [update_tombstone(result_spec, start, key) for start, key in changes.gone]
    current = update_records(result_spec, rows_of(result_spec, changes.changed), final=False)
    return deleted + current + update_records(result_spec, final_rows, final=True)

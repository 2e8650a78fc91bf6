"""One batch of one task into Redis, exactly once: pre-aggregate, side records, one script.

`TaskBatchWriter.write` is the SEQ protocol's writer loop (docs/protocol.md):

1. drop records at or below the view's applied offset of their partition (already applied);
2. pre-aggregate the rest with the task's stream times (lateness per record, in the engine);
3. publish late and bad records to the side topics and flush (at-least-once, before Redis);
4. `apply_batch` with `expected` = the view: one round trip for the task's whole batch;
5. REJECTED: take the stored states. Where Redis is ahead (a replay, a zombie, another mapper
   after a rebalance) move the view forward, trim and retry; where Redis is behind (it lost
   acknowledged writes) the partition must be re-read from Kafka: the writer reports a rewind.
6. LAYOUT CHANGED (the task's bucket count changed, mars.tasks.bucket_layout): the batch's
   partitions are re-read from Kafka once the new spec has arrived: a rewind of each.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from mapper.source_state_book import TaskView
from mapper.task_router import ActiveTask
from mars.chunk_writer import apply_chunk
from mars.engine.records import PartitionBatch, SourceBatch, SourceRecord
from mars.engine.shared_decode import BatchDecoding
from mars.side_topics import SideRecordSink
from mars.store import BucketLayoutChangedError, SeqStore

# partition -> records in offset order (the mapper passes `PartitionBatch`es)
PartitionRecords = Mapping[int, Sequence[SourceRecord]]

_MAX_ATTEMPTS = 50


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicBatch:
    """One Kafka batch of a topic, as the engine takes it, with its decoding shared by the
    topic's tasks. A task whose share is the whole batch uses both; one that must skip records
    (already applied) builds its own."""

    records: PartitionRecords
    batch: SourceBatch
    decoding: BatchDecoding | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class WriteOutcome:
    """What one `write` did. Counts cover only what this call applied."""

    applied: bool = False
    records_in: int = 0
    bad: int = 0
    late: int = 0
    datasets: int = 0
    rejected: int = 0  # REJECTED answers on the way (replays, zombies, races)
    rewind: Mapping[int, int] = field(default_factory=dict)  # partition -> offset to re-read
    layout_changed: bool = False  # the task's spec is stale: wait for the new one


def unapplied(records: Sequence[SourceRecord], applied_offset: int) -> Sequence[SourceRecord]:
    """The records above `applied_offset` (records are in offset order: a bisect, no scan)."""
    if isinstance(records, PartitionBatch):
        return records.after(applied_offset)
    if not records or records[0].offset > applied_offset:
        return records
    cut = bisect.bisect_right(records, applied_offset, key=lambda r: r.offset)
    return records[cut:]


class TaskBatchWriter:
    """Writes one task's share of a Kafka batch through the SEQ protocol."""

    def __init__(
        self, *, store: SeqStore, side_records: SideRecordSink, clock_ms: Callable[[], int]
    ) -> None:
        self._store = store
        self._side = side_records
        self._clock_ms = clock_ms

    def write(
        self,
        task: ActiveTask,
        records: PartitionRecords,
        view: TaskView,
        *,
        extra_counters: Mapping[str, int] | None = None,
        shared: TopicBatch | None = None,
    ) -> WriteOutcome:
        """Apply `records` for `task` on top of `view` (advanced in place when applied).

        `extra_counters` (e.g. paused time) ride along in the same script when it applies;
        `shared` is `records` as one batch decoded for all tasks over the topic.
        """
        rewind: dict[int, int] = {}
        rejected = 0
        pending = self._trim(records, view, skip=rewind)
        for _attempt in range(_MAX_ATTEMPTS):
            if not pending:
                return WriteOutcome(rejected=rejected, rewind=rewind)
            if shared is not None and _same_records(pending, shared.records):
                batch, decoding = shared.batch, shared.decoding
            else:
                batch, decoding = SourceBatch.of_partitions(pending), None
            try:
                chunk = apply_chunk(
                    self._store,
                    self._side,
                    spec=task.spec,
                    preaggregator=task.preaggregator,
                    records=batch,
                    decoding=decoding,
                    views={p: view[p] for p in pending},
                    side_source=task.topic,
                    now_ms=self._clock_ms(),
                    extra_counters=extra_counters,
                )
            except BucketLayoutChangedError:
                # Late and bad records already published are sent again on the re-read:
                # side topics are at-least-once, the counters (in the script) stay exact.
                rewind.update({p: view[p].applied_offset + 1 for p in pending})
                return WriteOutcome(rejected=rejected + 1, rewind=rewind, layout_changed=True)
            partials, result = chunk.partials, chunk.result
            if result.applied:
                view.update(chunk.states)
                return WriteOutcome(
                    applied=True,
                    records_in=partials.records_in,
                    bad=len(partials.bad),
                    late=len(partials.late),
                    datasets=len(partials.datasets),
                    rejected=rejected,
                    rewind=rewind,
                )
            rejected += 1
            for partition, stored in result.sources.items():
                if not isinstance(partition, int):
                    continue
                if stored.applied_offset < view[partition].applied_offset:
                    # Redis lost writes we saw acknowledged: re-read them from Kafka.
                    rewind[partition] = stored.applied_offset + 1
                view[partition] = stored
            pending = self._trim(pending, view, skip=rewind)
        raise RuntimeError(f"task {task.id}: batch rejected {_MAX_ATTEMPTS} times in a row")

    @staticmethod
    def _trim(
        records: PartitionRecords, view: TaskView, *, skip: Mapping[int, int]
    ) -> dict[int, Sequence[SourceRecord]]:
        trimmed: dict[int, Sequence[SourceRecord]] = {}
        for partition, part in records.items():
            if partition in skip:
                continue
            remaining = unapplied(part, view[partition].applied_offset)
            if remaining:
                trimmed[partition] = remaining
        return trimmed


def _same_records(pending: PartitionRecords, records: PartitionRecords) -> bool:
    """Whether `pending` is all of `records`, partition for partition (trimming returns a
    partition's very records when it skips none of them)."""
    return len(pending) == len(records) and all(
        part is records.get(partition) for partition, part in pending.items()
    )

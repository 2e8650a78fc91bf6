"""The executor side of a backfill or a Spark stream: one source partition's records, in
order, into Redis.

Runs inside a Spark task over the records of one partition (a Kafka partition's offset range,
or one input file's lines), sorted by offset. It does exactly what a live mapper does with its
batches, with the same code (`mars.engine.preaggregate.Preaggregator`): cut the records into
chunks, pre-aggregate each chunk with the partition's stream time so lateness is decided record
by record in partition order, send bad and late records to the side topics, and write the
chunk's data sets through `SeqStore.apply_batch` under the source id `backfill:<job>:<p>`,
or, for the live stream of a task (`mars spark stream`, `WriterConfig.live`), under the Kafka
partition itself, as mappers do: then the reducers take their watermark from it.

The source id's applied offset and stream time are read from Redis when the task starts, so a
re-run of the job or a retried Spark task skips what was applied and continues the lateness
decisions where they stopped: nothing is counted twice, and the outcome does not depend on where
chunks or retries cut the partition.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from mars.chunk_writer import apply_chunk
from mars.clients import connect_redis
from mars.config import KafkaSettings, RedisSettings
from mars.engine.preaggregate import Preaggregator
from mars.engine.records import SourceRecord
from mars.side_topics import SideRecordSink, SideTopicProducer
from mars.store import SeqStore, SourceState
from mars.store.state import SourceId
from mars.tasks.spec import TaskSpec
from spark.record_columns import (
    RawRecord,
    RecordColumns,
    as_columns,
    check_increasing,
    partition_runs,
)
from spark.summary import PartitionSummary


def backfill_source_id(job: str, partition: int) -> str:
    """The SEQ protocol source id of one partition of a backfill job."""
    return f"backfill:{job}:{partition}"


class BackfillConflictError(Exception):
    """Redis holds a state for the source that this task cannot continue from (e.g. Redis lost
    acknowledged writes): fail the Spark task, its retry restarts from Redis's state."""


@dataclass(frozen=True, slots=True, kw_only=True)
class WriterConfig:
    """Everything an executor needs, as plain picklable data (shipped with the closure)."""

    spec: dict[str, Any]  # TaskSpec.to_json_dict()
    job: str
    redis: RedisSettings  # the URL carries the credentials: redis://user:password@host/db
    kafka: KafkaSettings  # brokers and client properties of the side-topic producer
    source_name: str  # the topic, or "file" for file sources (side records' `mars.source`)
    chunk_size: int = 50_000
    partition_names: Mapping[int, str] = field(default_factory=dict)  # file index -> path
    live: bool = False  # the task's live stream: source ids are the partitions themselves


@dataclass(slots=True)
class _PartitionRun:
    """Where one partition stands (last applied offset, stream time after it) and the tally."""

    partition: int
    applied: int
    stream_time: int | None
    records_read: int = 0
    skipped: int = 0
    records_in: int = 0
    accepted: int = 0
    filtered: int = 0
    bad: int = 0
    late: int = 0
    datasets: int = 0
    chunks: int = 0
    key_clocks: bytes | None = None  # watermark = 'key' (mars.engine.key_clocks)

    def summary(self) -> PartitionSummary:
        return PartitionSummary(
            partition=self.partition,
            records_read=self.records_read,
            skipped=self.skipped,
            records_in=self.records_in,
            accepted=self.accepted,
            filtered=self.filtered,
            bad=self.bad,
            late=self.late,
            datasets=self.datasets,
            chunks=self.chunks,
            last_offset=self.applied if self.applied >= 0 else None,
            stream_time_ms=self.stream_time,
        )


class PartitionBackfillWriter:
    """Writes sorted records of source partitions through the SEQ protocol in chunks."""

    def __init__(
        self,
        config: WriterConfig,
        *,
        store: SeqStore,
        side_records: SideRecordSink,
        clock_ms: Callable[[], int] = lambda: int(time.time() * 1000),
    ) -> None:
        self._config = config
        self._spec = TaskSpec.from_json_dict(config.spec)
        self._preaggregator = Preaggregator.for_spec(self._spec)
        self._store = store
        self._side = side_records
        self._clock_ms = clock_ms

    def write(self, records: Iterable[RawRecord]) -> Iterator[PartitionSummary]:
        """Apply `records` (grouped by partition, each in offset order); one summary per
        partition seen."""
        yield from self.write_columns(as_columns(records, self._config.chunk_size))

    def write_columns(self, batches: Iterable[RecordColumns]) -> Iterator[PartitionSummary]:
        """Apply column batches (grouped by partition, each in offset order, as an Arrow
        stream delivers them); one summary per partition seen. Python work per record is one
        `SourceRecord`; order checks and skips are done per run of a batch."""
        run: _PartitionRun | None = None
        chunk: list[SourceRecord] = []
        last_seen = -1
        size = self._config.chunk_size
        for batch in batches:
            for partition, lo, hi in partition_runs(batch.partitions):
                if run is None or partition != run.partition:
                    if run is not None:
                        yield self._finish(run, chunk)
                        chunk = []
                    run, last_seen = self._start(partition), -1
                offsets = batch.offsets[lo:hi]
                values = batch.values[lo:hi]
                check_increasing(partition, offsets, after=last_seen)
                last_seen = offsets[-1]
                run.records_read += len(offsets)
                position = 0
                while position < len(offsets):
                    # Skip what is applied; `run.applied` may jump after a chunk another
                    # attempt of this task had applied already.
                    first = bisect.bisect_right(offsets, run.applied, lo=position)
                    run.skipped += first - position
                    stop = min(len(offsets), first + size - len(chunk))
                    chunk.extend(
                        SourceRecord(partition=partition, offset=offset, value=value or b"")
                        for offset, value in zip(
                            offsets[first:stop], values[first:stop], strict=True
                        )
                    )
                    position = stop
                    if len(chunk) >= size:
                        self._apply(run, chunk)
                        chunk = []
        if run is not None:
            yield self._finish(run, chunk)

    def _source(self, partition: int) -> SourceId:
        return partition if self._config.live else backfill_source_id(self._config.job, partition)

    def _start(self, partition: int) -> _PartitionRun:
        source = self._source(partition)
        state = self._store.read_source_states(self._spec.id, [source])[source]
        return _PartitionRun(
            partition=partition,
            applied=state.applied_offset,
            stream_time=state.stream_time_ms,
            key_clocks=state.key_clocks,
        )

    def _finish(self, run: _PartitionRun, chunk: list[SourceRecord]) -> PartitionSummary:
        if chunk:
            self._apply(run, chunk)
        return run.summary()

    def _apply(self, run: _PartitionRun, chunk: list[SourceRecord]) -> None:
        """Pre-aggregate and apply one chunk; advances `run` in place."""
        source = self._source(run.partition)
        applied = apply_chunk(
            self._store,
            self._side,
            spec=self._spec,
            preaggregator=self._preaggregator,
            records=chunk,
            views={
                run.partition: SourceState(
                    applied_offset=run.applied,
                    stream_time_ms=run.stream_time,
                    key_clocks=run.key_clocks,
                )
            },
            side_source=self._config.partition_names.get(run.partition, self._config.source_name),
            now_ms=self._clock_ms(),
            source_id=self._source,
        )
        partials, result = applied.partials, applied.result
        new_state = applied.states[run.partition]
        if not result.applied:
            stored = result.sources.get(source)
            written: dict[Any, SourceState] = {source: new_state}  # an int or a backfill id
            if stored is None or not result.covers(written):
                raise BackfillConflictError(
                    f"{source}: expected applied offset {run.applied}, Redis holds "
                    f"{None if stored is None else stored.applied_offset}"
                )
            # Another attempt of this task (speculation, a lost reply) applied it already.
            run.applied, run.stream_time = stored.applied_offset, stored.stream_time_ms
            run.key_clocks = stored.key_clocks
            run.skipped += len(chunk)
            return
        run.applied, run.stream_time = new_state.applied_offset, new_state.stream_time_ms
        run.key_clocks = new_state.key_clocks
        run.records_in += partials.records_in
        run.accepted += partials.accepted
        run.filtered += partials.filtered
        run.bad += len(partials.bad)
        run.late += len(partials.late)
        run.datasets += len(partials.datasets)
        run.chunks += 1


@contextmanager
def connected_writer(config: WriterConfig) -> Iterator[PartitionBackfillWriter]:
    """A writer on its own Redis connection and side-topic producer (one per Spark task)."""
    client = connect_redis(config.redis)
    try:
        yield PartitionBackfillWriter(
            config,
            store=SeqStore(client),
            side_records=SideTopicProducer.connect(config.kafka),
        )
    finally:
        client.close()


def run_partition(config: WriterConfig, rows: Iterable[Any]) -> Iterator[PartitionSummary]:
    """The function Spark runs per partition of a file source (`mapPartitions`): row tuples
    `(partition, offset, value)`. Kafka sources go through `spark.arrow_executor`."""
    with connected_writer(config) as writer:
        yield from writer.write((int(r[0]), int(r[1]), bytes(r[2])) for r in rows)

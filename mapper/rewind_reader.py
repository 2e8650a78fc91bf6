"""The re-read of a rewind (docs/rewind.md), run by every mapper process beside its loop.

For each running task with a pending rewind (its watermark hold `rewind:<g>` still in Redis):
per partition p, the records of offsets `[start[p], H[p])` are read again with a consumer of
their own (assigned, no group), pre-aggregated by the same code as the live mappers', cut to
the windows from `T'` on, and applied under the source id `rewind:<g>:<p>`. The source id's
applied offset guards it as any writer's: mappers re-reading the same partition at once, or
one restarting, count each record once. Counters and side topics are left alone: the records
were counted, and their late and bad ones published, when they were first read. Once every
partition reached its hand-over offset, the hold goes and the reducers close the windows from
`T'` on again.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from confluent_kafka import Consumer, TopicPartition

from mars.clients import client_config
from mars.config import Settings
from mars.engine import Preaggregator
from mars.engine.dataset import decode_dataset, encode_dataset
from mars.engine.records import SourceRecord
from mars.registry import TaskRecord, TaskStatus
from mars.store import BucketLayoutChangedError, SeqStore, SourceState
from mars.tasks.rewind import TaskRewind
from mars.tasks.spec import TaskSpec

log = logging.getLogger(__name__)

Clock = Callable[[], int]


def windows_from(data: bytes, from_window_ms: int) -> tuple[bytes | None, int | None]:
    """A data set cut to its windows starting at or after `from_window_ms` (None: none left),
    and the latest window start kept."""
    dataset = decode_dataset(data)
    kept = {start: groups for start, groups in dataset.windows.items() if start >= from_window_ms}
    if not kept:
        return None, None
    return encode_dataset(dataset.aggregates, kept), max(kept)


class RewindReader:
    """Re-reads the pending rewinds of the tasks the registry watch reports."""

    def __init__(
        self,
        *,
        settings: Settings,
        store: SeqStore,
        clock_ms: Clock,
        stop: threading.Event,
        chunk: int = 20_000,
        interval_s: float = 1.0,
    ) -> None:
        self._settings = settings
        self._store = store
        self._clock_ms = clock_ms
        self._stop = stop
        self._chunk = chunk
        self._interval_s = interval_s
        self._lock = threading.Lock()
        self._specs: dict[str, TaskSpec] = {}
        self._compiled: dict[str, tuple[TaskSpec, Preaggregator]] = {}

    def on_tasks(self, records: Mapping[str, TaskRecord]) -> None:
        """Registry watch callback (any thread): the running tasks' newest specs."""
        with self._lock:
            self._specs = {
                task: record.spec
                for task, record in records.items()
                if record.status is TaskStatus.RUNNING
            }

    def start(self) -> threading.Thread:
        thread = threading.Thread(target=self.run, name="rewind-reader", daemon=True)
        thread.start()
        return thread

    def run(self) -> None:
        while not self._stop.is_set():
            try:
                self.poll()
            except Exception as exc:  # Kafka or Redis away: try again at the next poll
                log.warning("rewind re-read: %s: %s", type(exc).__name__, exc)
            self._stop.wait(self._interval_s)

    def poll(self) -> None:
        """Re-read every pending rewind of every running task once."""
        with self._lock:
            specs = dict(self._specs)
        for task, rewinds in self._store.rewinds.pending(specs).items():
            for rewind in rewinds:
                if self._stop.is_set():
                    return
                self.reread(specs[task], rewind)

    def reread(self, spec: TaskSpec, rewind: TaskRewind) -> bool:
        """Re-read what is left of `rewind`; release its hold when all of it is applied."""
        for partition in range(len(rewind.handovers)):
            self._reread_partition(spec, rewind, partition)
        if self._done(spec.id, rewind):
            self._store.rewinds.finish(spec.id, rewind)
            log.info("task %s: rewind %s re-read, watermark released", spec.id, rewind.generation)
            return True
        return False

    def _done(self, task: str, rewind: TaskRewind) -> bool:
        sources = [rewind.source_id(p) for p in range(len(rewind.handovers))]
        states = self._store.read_source_states(task, sources)
        return all(
            rewind.starts[p] >= end or states[rewind.source_id(p)].applied_offset >= end - 1
            for p, end in enumerate(rewind.handovers)
        )

    def _preaggregator(self, spec: TaskSpec) -> Preaggregator:
        known = self._compiled.get(spec.id)
        if known is None or known[0] != spec:
            known = (spec, Preaggregator.for_spec(spec))
            self._compiled[spec.id] = known
        return known[1]

    def _reread_partition(self, spec: TaskSpec, rewind: TaskRewind, partition: int) -> None:
        source = rewind.source_id(partition)
        end = rewind.handovers[partition]
        state = self._store.read_source_states(spec.id, [source])[source]
        position = max(rewind.starts[partition], state.applied_offset + 1)
        if position >= end:
            return
        consumer = Consumer(self._consumer_config())
        try:
            consumer.assign([TopicPartition(spec.source_topic, partition, position)])
            while position < end and not self._stop.is_set():
                messages = consumer.consume(num_messages=self._chunk, timeout=1.0)
                records = [
                    SourceRecord(partition=partition, offset=offset, value=m.value() or b"")
                    for m in messages
                    if m.error() is None and (offset := m.offset()) is not None and offset < end
                ]
                # Transaction markers take offsets: the consumer's position says how far
                # the partition was read, records or not.
                read_to = consumer.position([TopicPartition(spec.source_topic, partition)])
                next_offset = max(
                    [read_to[0].offset if read_to and read_to[0].offset >= 0 else position]
                    + [r.offset + 1 for r in records]
                )
                applied = min(next_offset, end) - 1
                if applied < position:
                    continue
                after = self._apply(spec, rewind, partition, state, records, applied)
                if after is None:  # another writer moved the source: start again from Redis
                    return
                state = after
                position = state.applied_offset + 1
        finally:
            consumer.close()

    def _apply(
        self,
        spec: TaskSpec,
        rewind: TaskRewind,
        partition: int,
        state: SourceState,
        records: list[SourceRecord],
        applied: int,
    ) -> SourceState | None:
        """Apply one chunk under `rewind:<g>:<partition>`; None when Redis refused it."""
        source = rewind.source_id(partition)
        stream_time = state.stream_time_ms
        datasets: dict[int, bytes] = {}
        last_window: int | None = None
        now = self._clock_ms()
        if records:
            partials = self._preaggregator(spec).run(records, {partition: stream_time}, now_ms=now)
            stream_time = partials.stream_times.get(partition, stream_time)
            for bucket, data in partials.datasets.items():
                kept, latest = windows_from(data, rewind.from_window_ms)
                if kept is not None and latest is not None:
                    datasets[bucket] = kept
                    last_window = latest if last_window is None else max(last_window, latest)
        new = SourceState(applied_offset=applied, stream_time_ms=stream_time)
        expected: dict[Any, int] = {source: state.applied_offset}
        try:
            result = self._store.apply_batch(
                spec.id,
                expected=expected,
                sources={source: new},
                datasets=datasets,
                counters={},
                now_ms=now,
                layout=spec.options.layout,
                last_window_start_ms=last_window,
            )
        except BucketLayoutChangedError:
            return None  # the registry brings the new layout; the next poll goes on
        return new if result.applied else None

    def _consumer_config(self) -> dict[str, Any]:
        return client_config(
            self._settings.kafka,
            {
                "group.id": f"mars-rewind-{uuid.uuid4().hex[:8]}",
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
                "isolation.level": "read_committed",
                "enable.partition.eof": False,
            },
        )

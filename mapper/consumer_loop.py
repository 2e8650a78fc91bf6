"""The mapper's main loop: follow the tasks, poll a batch, write it per task, commit, repeat.

Everything Kafka and Redis happens on the thread that calls `run` (rebalance callbacks run
inside `consume`, between batches), so no batch is ever half processed when partitions move.
Per iteration: apply task changes from the registry, keep the subscription equal to the
existing source topics of the RUNNING tasks, check backpressure (every 0.5 s), heartbeat (with
a fresh broker answer per owned partition: `mapper.caught_up`, which also gives the consumer
lag for the metrics and the status in ZooKeeper), then consume up to
`batch_size` records (by topic and partition: `mars.clients.native_consumer` builds them in
Rust, `mapper.partition_batches` from confluent-kafka's messages) and hand each task its share
(`TaskBatchWriter.write`: one Redis round trip per task). Kafka offsets are committed after
Redis answered for every task of the batch.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from confluent_kafka import KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient
from prometheus_client import CollectorRegistry

from mapper.backpressure import BackpressureGate, PressureMarks
from mapper.batch_writer import TaskBatchWriter, TopicBatch, WriteOutcome
from mapper.caught_up import CaughtUpTracker
from mapper.errors import SideTopicError, StopRequested, retry_delays
from mapper.liveness import LivenessReporter
from mapper.mapper_metrics import MapperMetrics
from mapper.partition_assignment import PartitionAssignment
from mapper.partition_batches import consume_by_partition
from mapper.source_state_book import SourceStateBook
from mapper.task_router import ActiveTask, TaskRouter, TaskSetChange
from mars.clients import REDIS_ERRORS, admin_client
from mars.clients.end_offsets import EndOffsetQuery, PartitionKey
from mars.clients.native_consumer import SourceConsumer
from mars.config import Settings
from mars.cpu_meter import CpuMeter
from mars.engine.records import PartitionBatch, SourceBatch, TopicBatches
from mars.formats.schema_registry import SchemaRegistryUnavailable
from mars.registry.mapper_status import MapperStatus, PartitionStatus
from mars.side_topics import SideRecordSink
from mars.store import SeqStore
from mars.tasks.topics import TopicError, ensure_task_topics

log = logging.getLogger(__name__)

TOPIC_CHECK_INTERVAL_MS = 2_000  # while a wanted topic does not exist yet
METADATA_REFRESH_INTERVAL_MS = 15_000  # otherwise (partition counts); a metadata call blocks
LAYOUT_WAIT_S = 0.2  # after a batch refused for a stale bucket layout, before re-reading it
_BACKEND_ERRORS: tuple[type[Exception], ...] = (KafkaException, *REDIS_ERRORS)  # retried
# A schema registry that cannot answer fails the batch, which is retried: records are never
# dead-lettered for it (docs/semantics.md, "Input formats").
_WRITE_ERRORS: tuple[type[Exception], ...] = (
    SideTopicError,
    SchemaRegistryUnavailable,
    *_BACKEND_ERRORS,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class LoopParts:
    """The collaborators of a `MapperLoop` (built by `mapper.mapper_process`, or by tests)."""

    consumer: SourceConsumer
    admin: AdminClient
    store: SeqStore
    router: TaskRouter
    side_records: SideRecordSink
    clock_ms: Callable[[], int]
    member_id: str = "mapper"
    metrics_registry: CollectorRegistry | None = None
    metrics_address: str | None = None  # published with the status
    publish_status: Callable[[MapperStatus], None] = lambda status: None


class MapperLoop:
    """One mapper's consume -> pre-aggregate -> apply -> commit loop."""

    def __init__(self, *, settings: Settings, parts: LoopParts, stop: threading.Event) -> None:
        self._settings = settings
        self._mapper = settings.mapper
        self._consumer = parts.consumer
        self._admin = parts.admin
        self._store = parts.store
        self._router = parts.router
        self._clock_ms = parts.clock_ms
        self._stop = stop
        self._progress = SourceStateBook(parts.store)
        self._assignment = PartitionAssignment(
            consumer=parts.consumer, router=parts.router, progress=self._progress, stop=stop
        )
        self._writer = TaskBatchWriter(
            store=parts.store, side_records=parts.side_records, clock_ms=parts.clock_ms
        )
        self._gate = BackpressureGate(
            PressureMarks(
                backlog_high_datasets=self._mapper.backlog_high_datasets,
                redis_memory_high_bytes=self._mapper.redis_memory_high_bytes,
            )
        )
        self._liveness = LivenessReporter(
            store=parts.store, interval_ms=self._mapper.heartbeat_interval_ms
        )
        self._caught_up = CaughtUpTracker()
        kafka = self._settings.kafka
        self._end_offsets = EndOffsetQuery(lambda: admin_client(kafka))
        self.metrics = MapperMetrics(registry=parts.metrics_registry)
        self._member_id = parts.member_id
        self._metrics_address = parts.metrics_address
        self._publish_status = parts.publish_status
        self._cpu = CpuMeter()
        self._subscribed: frozenset[str] = frozenset()
        self._partition_counts: dict[str, int] = {}
        self._last_topic_check_ms: int | None = None
        self._last_pressure_ms: int | None = None
        self._uncommitted: dict[tuple[str, int], int] = {}

    # -- the loop ------------------------------------------------------------------------------

    def run(self) -> None:
        """Iterate until the stop event is set; then commit and leave the group (`close`)."""
        try:
            while not self._stop.is_set():
                self.run_once()
        except StopRequested:
            log.info("stopping in the middle of a retry; the batch will be re-read")
        finally:
            self.close()

    def run_once(self) -> None:
        now = self._clock_ms()
        change = self._router.refresh()
        if change is not None:
            self._on_task_change(change)
        if (change is not None and change.topics_changed) or self._topic_check_due(now):
            self._sync_subscription(now)
        self._assignment.apply_pending_seeks()
        if self._gate.due(now):
            self._check_pressure(now)
        if self._liveness.due(now):
            self._heartbeat(now)
        self.metrics.log_if_due(now)
        batches = consume_by_partition(
            self._consumer, self._mapper.batch_size, self._mapper.batch_timeout_ms / 1000
        )
        self._sync_pauses()  # a rebalance inside consume un-pauses what it assigned
        if batches:
            self._process(batches)

    def close(self) -> None:
        """Commit what was written, hand paused time to Redis, leave the group."""
        try:
            self._commit(asynchronous=False)
            for task_id in list(self._router.tasks):
                counters = self.metrics.take_unflushed_paused(task_id)
                if counters:
                    self._store.counters.add(task_id, counters)
        except _BACKEND_ERRORS as exc:
            log.warning("final commit failed (the next owner re-reads from Redis): %s", exc)
        finally:
            self._consumer.close()
            log.info("left the consumer group; final metrics %s", self.metrics.snapshot())

    # -- one batch -----------------------------------------------------------------------------

    def _process(self, by_topic: TopicBatches) -> None:
        for topic, partitions in by_topic.items():
            # Records behind a pending seek were fetched before it: the seek re-reads them.
            live = {
                p: records
                for p, records in partitions.items()
                if not self._assignment.seeking(topic, p)
            }
            tasks = self._router.tasks_for(topic)
            shared = None
            if tasks and live:  # one batch and one decode for all of the topic's tasks
                batch = SourceBatch.of_partitions(live)
                decoding = self._router.decoders_for(topic).decoding(batch.values)
                shared = TopicBatch(records=live, batch=batch, decoding=decoding)
            for task in tasks:
                outcome = self._write_with_retry(task, live, shared)
                for partition, offset in outcome.rewind.items():
                    self._assignment.rewind(topic, partition, offset)
            for partition, records in live.items():
                last = records.offsets[-1]
                self._assignment.consumed(topic, partition, last)
                self._caught_up.consumed((topic, partition))
                if not self._assignment.seeking(topic, partition):
                    self._uncommitted[(topic, partition)] = last + 1
        self._commit(asynchronous=True)
        self._sync_pauses()

    def _write_with_retry(
        self, task: ActiveTask, records: dict[int, PartitionBatch], shared: TopicBatch | None
    ) -> WriteOutcome:
        extra = self.metrics.take_unflushed_paused(task.id)
        started = time.monotonic()
        reread = False  # after a failure, re-read the truth from Redis before trying again
        for delay in retry_delays():
            try:
                # Inside the try: Redis may still be down or loading its AOF (BusyLoadingError).
                view = (
                    self._progress.load(task.id, records)
                    if reread
                    else self._progress.view(task.id, records)
                )
                outcome = self._writer.write(
                    task, records, view, extra_counters=extra, shared=shared
                )
                break
            except _WRITE_ERRORS as exc:
                # Nothing is committed to Kafka until this succeeds; Redis decides what applied.
                log.warning("task %s: write failed (%s), retrying in %.1f s", task.id, exc, delay)
                if self._stop.wait(delay):
                    raise StopRequested from exc
                reread = True
        if outcome.layout_changed:
            log.info("task %s: bucket layout changed; re-reading the batch on the new", task.id)
            if self._stop.wait(LAYOUT_WAIT_S):  # the registry's watch brings the new spec
                raise StopRequested
        if not outcome.applied:
            self.metrics.return_unflushed_paused(task.id, extra)
        self.metrics.record_write(task.id, outcome, seconds=time.monotonic() - started)
        if outcome.datasets:
            buckets = task.spec.options.layout.unit_count
            self._gate.note_written(task.id, outcome.datasets, buckets=buckets)
        return outcome

    def _commit(self, *, asynchronous: bool) -> None:
        if not self._uncommitted:
            return
        offsets = [TopicPartition(t, p, o) for (t, p), o in sorted(self._uncommitted.items())]
        self._uncommitted.clear()
        try:
            if asynchronous:
                self._consumer.commit(offsets=offsets, asynchronous=True)
            else:
                self._consumer.commit(offsets=offsets, asynchronous=False)
        except KafkaException as exc:
            # Only a hint for the next owner; the applied offsets in Redis are the truth.
            log.warning("offset commit failed: %s", exc)

    # -- tasks and topics ----------------------------------------------------------------------

    def _on_task_change(self, change: TaskSetChange) -> None:
        for task_id in change.removed:
            self._progress.forget_task(task_id)
            self.metrics.forget(task_id)
            log.info("task %s: stopped mapping", task_id)
        for task_id in sorted(change.added):
            task = self._router.tasks[task_id]
            try:
                ensure_task_topics(self._admin, task.spec, self._settings.kafka)
            except TopicError as exc:  # side records will be retried until they exist
                log.error("task %s: cannot create its topics: %s", task_id, exc)
            self._assignment.task_started(task_id, task.topic)
            log.info("task %s: mapping topic %s", task_id, task.topic)

    def _topic_check_due(self, now: int) -> bool:
        last = self._last_topic_check_ms
        missing = not self._router.topics <= self._subscribed
        interval = TOPIC_CHECK_INTERVAL_MS if missing else METADATA_REFRESH_INTERVAL_MS
        return last is None or now - last >= interval

    def _sync_subscription(self, now: int) -> None:
        """Subscribe to the wanted topics that exist (a missing one is picked up later)."""
        self._last_topic_check_ms = now
        wanted = self._router.topics
        if wanted:
            try:
                metadata = self._consumer.list_topics(timeout=5)
            except KafkaException as exc:
                log.warning("cannot list topics: %s", exc)
                return
            self._partition_counts = {
                name: len(meta.partitions)
                for name, meta in metadata.topics.items()
                if name in wanted and meta.error is None
            }
        else:
            self._partition_counts = {}
        existing = frozenset(self._partition_counts)
        if existing == self._subscribed:
            return
        self._subscribed = existing
        if existing:
            self._consumer.subscribe(
                sorted(existing),
                on_assign=self._assignment.on_assign,
                on_revoke=self._assignment.on_revoke,
                on_lost=self._assignment.on_lost,
            )
        else:
            self._consumer.unsubscribe()
        log.info("subscribed to %s", sorted(existing) or "nothing")

    # -- backpressure and liveness -------------------------------------------------------------

    def _check_pressure(self, now: int) -> None:
        tasks = self._router.tasks
        try:
            backlogs = self._store.backlogs(
                {task_id: task.spec.options.layout.unit_count for task_id, task in tasks.items()}
            )
            memory = self._store.memory_used()
        except REDIS_ERRORS as exc:
            log.warning("backpressure check failed: %s", exc)
            return
        elapsed = 0 if self._last_pressure_ms is None else now - self._last_pressure_ms
        self._last_pressure_ms = now
        for task_id in tasks:
            if self._gate.pressured(task_id):
                self.metrics.add_paused(task_id, elapsed)
        self._gate.update(now_ms=now, backlogs=backlogs, memory_used=memory)
        for task_id, task in tasks.items():
            self._gate.evaluate(task_id, buckets=task.spec.options.layout.unit_count)
            self.metrics.set_backlog(task_id, backlogs[task_id].unmerged)
        self._sync_pauses()

    def _sync_pauses(self) -> None:
        wanted = [
            (topic, partition)
            for topic, partitions in self._assignment.owned.items()
            if any(self._gate.pressured(task.id) for task in self._router.tasks_for(topic))
            for partition in partitions
        ]
        self._assignment.set_paused(wanted)

    def _heartbeat(self, now: int) -> None:
        """One broker answer for every owned partition's end, then: the idle heartbeats to
        Redis, the lag to the metrics and the status to ZooKeeper."""
        owned = {(t, p) for t, partitions in self._assignment.owned.items() for p in partitions}
        ends = self._end_offsets.ends(owned) or {}  # None: no broker answered
        positions = {key: self._read_position(key) for key in sorted(owned)}
        self._liveness.report(
            now_ms=now,
            tasks=self._router.tasks.values(),
            partition_counts=self._partition_counts,
            owned=self._assignment.owned_view(),
            caught_up_since=self._caught_up_since(positions, ends, now),
        )
        self._report_status(positions, ends, now)

    def _caught_up_since(
        self, positions: Mapping[PartitionKey, int], ends: Mapping[PartitionKey, int], now: int
    ) -> dict[PartitionKey, int | None]:
        """Since when each owned partition is caught up by this round's broker answer (None:
        it is not, or no broker answered). See `mapper.caught_up`."""
        self._caught_up.forget(set(positions))
        return {
            key: self._caught_up.confirmed(
                key,
                caught_up=key in ends
                and position >= ends[key]
                and key not in self._assignment.paused
                and not self._assignment.seeking(*key),
                now_ms=now,
            )
            for key, position in positions.items()
        }

    def _report_status(
        self, positions: Mapping[PartitionKey, int], ends: Mapping[PartitionKey, int], now: int
    ) -> None:
        """Lag and pauses to the metrics, and the whole status to ZooKeeper."""
        partitions = []
        for key, position in positions.items():
            end = ends.get(key)
            lag = None if end is None or position < 0 else max(0, end - position)
            partitions.append(
                PartitionStatus(
                    topic=key[0],
                    partition=key[1],
                    position=position,
                    end=end,
                    lag=lag,
                    paused=key in self._assignment.paused,
                )
            )
        self.metrics.set_partitions(
            {(p.topic, p.partition): p.lag for p in partitions},
            paused=self._assignment.paused,
        )
        self._publish_status(
            MapperStatus(
                member_id=self._member_id,
                metrics=self._metrics_address,
                updated_ms=now,
                partitions=partitions,
                backlog=self.metrics.backlogs(),
                cpu=self._cpu.share(),
            )
        )

    def _read_position(self, key: PartitionKey) -> int:
        """The next offset this mapper reads from the partition (-1: unknown)."""
        try:
            position = self._consumer.position([TopicPartition(*key)])[0].offset
        except KafkaException:
            position = -1
        return max(self._assignment.next_offset.get(key, -1), position)


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000

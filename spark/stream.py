"""`mars spark stream <task>`: the live pre-aggregation of a task on Spark Structured Streaming.

A task registered with `preaggregation = 'spark'` is left alone by mapper processes
(`mapper.task_router`); this driver takes their place:

1. the stream starts, per partition, after the applied offset Redis holds for it (the first
   record nobody applied); Spark's own checkpoint is not used, so a restarted job always
   continues from Redis;
2. each micro-batch (`foreachBatch`) runs the backfill's executor code (`mapInArrow` ->
   `spark.partition_writer`) with `WriterConfig.live`: one Spark task per Kafka
   partition, records in offset order, pre-aggregated in chunks with the partition's stream
   time and written through the same SEQ script under the partition's own source id, as a
   mapper does. The script's applied-offset check makes every write idempotent: a retried
   Spark task, a re-run micro-batch or a restarted query skips what is applied;
3. a heartbeat thread publishes, every `heartbeat_interval_s`, each partition's caught-up
   state (everything up to the partition's last stable offset applied in Redis) with the
   topic's partition count, as mappers do: the reducers' watermark and idle close need it.

Late and bad records go to the task's side topics from the executors, as with mappers.
"""

from __future__ import annotations

import json
import logging
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mars.clients import admin_client, connect_redis, spark_kafka_options
from mars.clients.end_offsets import EndOffsetQuery
from mars.config import Settings
from mars.store import SeqStore
from mars.tasks.spec import Preaggregation, TaskSpec
from mars.tasks.topics import ensure_task_topics
from spark.arrow_executor import SUMMARY_SCHEMA, run_arrow_partition, summaries_from_rows
from spark.backfill_job import topic_watermarks
from spark.partition_writer import WriterConfig

log = logging.getLogger(__name__)

EARLIEST = -2  # Spark's startingOffsets code for the earliest offset


class StreamError(Exception):
    """The stream cannot run this task (the message says why and what to do)."""


@dataclass(slots=True)
class StreamTally:
    """What the stream applied since it started (driver side, updated per micro-batch)."""

    batches: int = 0
    records_in: int = 0
    late: int = 0
    bad: int = 0
    datasets: int = 0
    skipped: int = 0  # records a retry or a restart found applied already
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def describe(self) -> str:
        return (
            f"{self.batches} micro-batches: {self.records_in:,} records in, {self.late:,} late, "
            f"{self.bad:,} bad, {self.datasets:,} data sets, {self.skipped:,} skipped as applied"
        )


def starting_offsets(store: SeqStore, spec: TaskSpec, partitions: list[int]) -> str:
    """Spark's `startingOffsets`: per partition, the first offset Redis has not applied."""
    applied = store.read_sources(spec.id)
    starts = {
        str(p): applied[p].applied_offset + 1
        if p in applied and applied[p].applied_offset >= 0
        else EARLIEST
        for p in partitions
    }
    return json.dumps({spec.source_topic: starts})


def run_stream(
    spark: Any,
    *,
    settings: Settings,
    spec: TaskSpec,
    stop: threading.Event,
    trigger_s: float = 1.0,
    chunk_size: int = 5_000,
    heartbeat_interval_s: float = 0.5,
    on_batch: Callable[[StreamTally], None] | None = None,
) -> StreamTally:
    """Pre-aggregate `spec`'s live stream on `spark` until `stop` is set (or the query fails,
    which raises)."""
    if spec.options.preaggregation is not Preaggregation.SPARK:
        raise StreamError(
            f"task {spec.id} is pre-aggregated by mapper processes; register it with "
            "WITH (preaggregation = 'spark') to run it on a Spark stream (never both at once)"
        )
    ensure_task_topics(admin_client(settings.kafka), spec, settings.kafka)
    partitions = sorted(topic_watermarks(settings.kafka, spec.source_topic))
    client = connect_redis(settings.redis)
    store = SeqStore(client)
    config = WriterConfig(
        spec=spec.to_json_dict(),
        job="live",
        redis=settings.redis,
        kafka=settings.kafka,
        source_name=spec.source_topic,
        chunk_size=chunk_size,
        live=True,
    )
    tally = StreamTally()

    def each_batch(batch: Any, _epoch: int) -> None:
        rows = batch.mapInArrow(lambda it: run_arrow_partition(config, it), SUMMARY_SCHEMA)
        parts = summaries_from_rows(rows.collect())
        with tally.lock:
            tally.batches += 1
            tally.records_in += sum(p.records_in for p in parts)
            tally.late += sum(p.late for p in parts)
            tally.bad += sum(p.bad for p in parts)
            tally.datasets += sum(p.datasets for p in parts)
            tally.skipped += sum(p.skipped for p in parts)
        if on_batch is not None:
            on_batch(tally)

    frame = (
        spark.readStream.format("kafka")
        .options(**spark_kafka_options(settings.kafka))
        .option("subscribe", spec.source_topic)
        .option("startingOffsets", starting_offsets(store, spec, partitions))
        .option("kafka.isolation.level", "read_committed")  # as mappers read
        .option("failOnDataLoss", "false")
        .load()
        .select("partition", "offset", "value")
    )
    heartbeat = _Heartbeat(settings, spec, store, partitions, interval_s=heartbeat_interval_s)
    with tempfile.TemporaryDirectory(prefix="mars-stream-") as checkpoint:
        query = (
            frame.writeStream.foreachBatch(each_batch)
            .option("checkpointLocation", checkpoint)
            .trigger(processingTime=f"{trigger_s} seconds")
            .queryName(f"mars-stream-{spec.id}")
            .start()
        )
        heartbeat.start()
        try:
            while not stop.wait(0.5):
                if not query.isActive:
                    error = query.exception()
                    raise StreamError(f"the streaming query stopped: {error}")
        finally:
            heartbeat.stop()
            query.stop()
            client.close()
    return tally


class _Heartbeat:
    """Publishes each partition's caught-up state as a mapper does (`SeqStore.heartbeat`): a
    partition is caught up when Redis has applied everything up to its last stable offset."""

    def __init__(
        self,
        settings: Settings,
        spec: TaskSpec,
        store: SeqStore,
        partitions: list[int],
        *,
        interval_s: float,
    ) -> None:
        self._spec, self._store, self._partitions = spec, store, partitions
        self._interval_s = interval_s
        self._ends = EndOffsetQuery(lambda: admin_client(settings.kafka))
        self._since: dict[int, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="stream-heartbeat", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _loop(self) -> None:
        while not self._stop.wait(self._interval_s):
            try:
                self._beat()
            except Exception as exc:  # a missed beat only delays idle close
                log.warning("stream heartbeat failed: %s", exc)

    def _beat(self) -> None:
        topic = self._spec.source_topic
        ends = self._ends.ends([(topic, p) for p in self._partitions])
        if ends is None:  # no broker answer: nobody is confirmed caught up
            return
        applied = self._store.read_sources(self._spec.id)
        now = int(time.time() * 1000)
        caught_up = {}
        for p in self._partitions:
            done = p in applied and applied[p].applied_offset + 1 >= ends[(topic, p)]
            empty = ends[(topic, p)] == 0
            caught_up[p] = done or empty
            if caught_up[p]:
                self._since.setdefault(p, now)
            else:
                self._since.pop(p, None)
        self._store.heartbeat(
            self._spec.id,
            partition_count=len(self._partitions),
            partitions=caught_up,
            now_ms=now,
            caught_up_since=self._since,
        )

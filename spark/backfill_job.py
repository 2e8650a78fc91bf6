"""The driver of a backfill: hold the watermark, fix the hand-over, run Spark, report.

    summary = run_backfill(spark, settings=settings, job=BackfillJob(spec=spec, job="history",
                           source=KafkaSource()), on_progress=print_progress)

Order of the steps (docs/spark.md explains why each is needed):
1. register a watermark hold for the job (reducers close nothing while it exists);
2. Kafka: resolve the offset specs against the topic and claim the hand-over point of each
   partition (recorded once; the live source is seeded so live mappers start there); the range
   of partition p becomes `[start, min(end, handover[p]))`;
3. run the executors (`spark.partition_writer`) over one Spark partition per source
   partition (Kafka records reach them as Arrow batches, `spark.arrow_executor`); they
   write through `SeqStore.apply_batch` under `backfill:<job>:<p>`;
4. Kafka: pass each partition's final stream time on to the live source if the live mappers have
   not started yet (so their lateness decisions continue from the history, as one mapper's);
5. release the hold. A failed job keeps its hold: re-run it (idempotent) or release it by hand.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, TopicPartition

from mars.clients import REDIS_ERRORS, admin_client, client_config, connect_redis
from mars.config import KafkaSettings, Settings
from mars.store import SeqStore, SourceState
from mars.store.backfill import BackfillCoordination
from mars.tasks.spec import InputFormat, TaskSpec, TimeFormat
from mars.tasks.topics import ensure_task_topics
from spark.arrow_executor import SUMMARY_SCHEMA, run_arrow_partition, summaries_from_rows
from spark.offsets import OffsetRange, parse_offsets_spec, resolve_ranges
from spark.partition_writer import WriterConfig, backfill_source_id, run_partition
from spark.sources import (
    FileFormat,
    FileSource,
    KafkaSource,
    file_format,
    file_rows,
    kafka_frame,
)
from spark.summary import BackfillSummary, PartitionSummary

ProgressCallback = Callable[[int, int | None], None]  # (records applied, total or None)

_METADATA_TIMEOUT_S = 15.0


class BackfillError(Exception):
    """The backfill cannot run as asked (bad source, processing-time task, ...)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class BackfillJob:
    """One backfill of one task. `job` is the idempotency key: the same job id never applies
    a record twice; different job ids over overlapping ranges would."""

    spec: TaskSpec
    source: KafkaSource | FileSource
    job: str | None = None
    chunk_size: int = 50_000

    def job_id(self, files: Sequence[str] = ()) -> str:
        """The given job id, or a deterministic default: `kafka`, or `files-<hash of paths>`."""
        if self.job:
            return self.job
        if isinstance(self.source, KafkaSource):
            return "kafka"
        return "files-" + hashlib.sha1("\n".join(files).encode()).hexdigest()[:12]


def topic_watermarks(kafka: KafkaSettings, topic: str) -> dict[int, tuple[int, int]]:
    """Partition -> (low, high) offsets of `topic`."""
    consumer = Consumer(client_config(kafka, {"group.id": "mars-backfill-probe"}))
    try:
        # A topic created moments ago may be missing from a broker's metadata for a while
        # (seconds on a loaded machine): ask again until the timeout, not once.
        deadline = time.monotonic() + _METADATA_TIMEOUT_S
        while True:
            metadata = consumer.list_topics(topic, timeout=_METADATA_TIMEOUT_S)
            described = metadata.topics.get(topic)
            if described is not None and described.error is None and described.partitions:
                break
            if time.monotonic() > deadline:
                raise BackfillError(f"topic {topic!r} is not available")
            time.sleep(0.5)
        return {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=_METADATA_TIMEOUT_S)
            for p in sorted(described.partitions)
        }
    finally:
        consumer.close()


def run_backfill(
    spark: Any,
    *,
    settings: Settings,
    job: BackfillJob,
    on_progress: ProgressCallback | None = None,
    progress_interval_s: float = 2.0,
) -> BackfillSummary:
    """Run `job` on `spark` (see the module docstring); returns the summary."""
    spec = job.spec
    if spec.event_time.format is TimeFormat.PROCESSING:
        raise BackfillError(f"task {spec.id} uses processing time: history has no event time")
    client = connect_redis(settings.redis)
    try:
        coordination = BackfillCoordination(client)
        started = time.monotonic()
        ensure_task_topics(admin_client(settings.kafka), spec, settings.kafka)
        if isinstance(job.source, KafkaSource):
            job_id = job.job_id()
            coordination.hold(spec.id, job_id, now_ms=int(time.time() * 1000))
            ranges = _kafka_ranges(settings, spec, job.source, coordination)
            rows = kafka_frame(
                spark,
                kafka=settings.kafka,
                topic=spec.source_topic,
                ranges=ranges,
            )
            names: dict[int, str] = {}
            total: int | None = sum(r.size for r in ranges)
            starts = {r.partition: r.start for r in ranges if r.size}
        else:
            files = job.source.files()
            if not files:
                raise BackfillError(f"no files match {job.source.path!r}")
            _check_file_formats(spec, files)
            job_id = job.job_id(files)
            coordination.hold(spec.id, job_id, now_ms=int(time.time() * 1000))
            rows = file_rows(spark, files)
            names = dict(enumerate(files))
            total, starts = None, {i: 0 for i in names}
        config = WriterConfig(
            spec=spec.to_json_dict(),
            job=job_id,
            redis=settings.redis,
            kafka=settings.kafka,
            source_name=spec.source_topic if isinstance(job.source, KafkaSource) else "file",
            chunk_size=job.chunk_size,
            partition_names=names,
        )
        with _ProgressReporter(
            SeqStore(client),
            task=spec.id,
            job=job_id,
            starts=starts,
            total=total,
            on_progress=on_progress,
            interval_s=progress_interval_s,
        ):
            parts = _run_executors(rows, config, kafka=isinstance(job.source, KafkaSource))
        if isinstance(job.source, KafkaSource):
            _continue_stream_times(SeqStore(client), spec.id, coordination, parts)
        coordination.release(spec.id, job_id)
        return BackfillSummary.of(
            task=spec.id, job=job_id, parts=parts, elapsed_s=time.monotonic() - started
        )
    finally:
        client.close()


def _run_executors(rows: Any, config: WriterConfig, *, kafka: bool) -> list[PartitionSummary]:
    """Run the writers over `rows`: Kafka's DataFrame through Arrow (`mapInArrow`), the files'
    RDD (read by the Python workers themselves, nothing to transfer) with `mapPartitions`."""
    if rows is None:
        return []
    if kafka:
        done = rows.mapInArrow(lambda batches: run_arrow_partition(config, batches), SUMMARY_SCHEMA)
        return summaries_from_rows(done.collect())
    parts: list[PartitionSummary] = rows.mapPartitions(
        lambda it: run_partition(config, it)
    ).collect()
    return parts


def _kafka_ranges(
    settings: Settings, spec: TaskSpec, source: KafkaSource, coordination: BackfillCoordination
) -> list[OffsetRange]:
    """Resolved ranges, each cut at its partition's hand-over point (claimed here if new)."""
    topic = spec.source_topic
    ranges = resolve_ranges(
        starting=parse_offsets_spec(source.starting_offsets, topic=topic),
        ending=parse_offsets_spec(source.ending_offsets, topic=topic),
        watermarks=topic_watermarks(settings.kafka, topic),
    )
    handovers = coordination.claim_handover(spec.id, {r.partition: r.end for r in ranges})
    return [
        OffsetRange(
            partition=r.partition,
            start=min(r.start, handovers[r.partition]),
            end=min(r.end, handovers[r.partition]),
        )
        for r in ranges
    ]


def _check_file_formats(spec: TaskSpec, files: Sequence[str]) -> None:
    if spec.options.input_format is InputFormat.CSV:
        parquet = [f for f in files if file_format(f) is FileFormat.PARQUET]
        if parquet:
            raise BackfillError(f"task {spec.id} reads CSV; Parquet files need a JSON task")


def _continue_stream_times(
    store: SeqStore,
    task: str,
    coordination: BackfillCoordination,
    parts: Sequence[PartitionSummary],
) -> None:
    """Give each live source, still at its hand-over point with no stream time, the stream time
    the backfill reached there, so live lateness continues from the history (idempotent)."""
    handovers = coordination.handovers(task)
    live = store.read_sources(task)
    for part in parts:
        handover = handovers.get(part.partition)
        state = live.get(part.partition)
        if (
            handover is None
            or state is None
            or part.stream_time_ms is None
            or part.last_offset != handover - 1
            or state.applied_offset != handover - 1
            or state.stream_time_ms is not None
        ):
            continue
        store.apply_batch(
            task,
            expected={part.partition: handover - 1},
            sources={
                part.partition: SourceState(
                    applied_offset=handover - 1, stream_time_ms=part.stream_time_ms
                )
            },
            datasets={},
            counters={},
            now_ms=int(time.time() * 1000),
        )


class _ProgressReporter:
    """Polls the backfill sources' applied offsets in Redis and reports records done."""

    def __init__(
        self,
        store: SeqStore,
        *,
        task: str,
        job: str,
        starts: Mapping[int, int],
        total: int | None,
        on_progress: ProgressCallback | None,
        interval_s: float,
    ) -> None:
        self._store = store
        self._task = task
        self._sources = {p: backfill_source_id(job, p) for p in starts}
        self._starts = dict(starts)
        self._total = total
        self._on_progress = on_progress
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="backfill-progress", daemon=True)

    def __enter__(self) -> _ProgressReporter:
        if self._on_progress is not None:
            self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
            self._report()

    def _loop(self) -> None:
        while not self._stop.wait(self._interval_s):
            self._report()

    def _report(self) -> None:
        assert self._on_progress is not None
        try:
            states = self._store.read_source_states(self._task, self._sources.values())
        except REDIS_ERRORS:
            return
        done = 0
        for partition, source in self._sources.items():
            applied = states[source].applied_offset
            if applied >= 0:
                done += max(0, applied + 1 - self._starts[partition])
        self._on_progress(done, self._total)

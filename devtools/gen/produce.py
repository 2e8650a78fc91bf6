"""Write a generated stream to a Kafka topic with confluent-kafka, as fast or as paced as asked.

The producer is idempotent with `acks=all`, so a retried batch is never duplicated and the
topic holds each generated record exactly once, in generation order per partition: the input
accounting of the integration tests (results + bad + late == produced) relies on that.
Partitions are chosen here (`devtools.gen.partitioning`), not by librdkafka.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import KafkaError, Message, Producer

from devtools.gen.config import GeneratorConfig
from devtools.gen.pacing import Clock, RatePacer, Sleep
from devtools.gen.partitioning import PartitionChooser, PartitionStrategy
from devtools.gen.tuples import BLOCK_SIZE, iter_chunks
from mars.clients.kafka_config import IDEMPOTENT_PRODUCER, admin_client, client_config
from mars.config import KafkaSettings
from mars.tasks.topics import Replication, TopicPlan, ensure_topics, partition_count

ProgressCallback = Callable[[int, int], None]  # (records handed to the producer, total)

THROUGHPUT_CONFIG: Mapping[str, Any] = {
    "linger.ms": 20,
    "batch.size": 1_000_000,
    "compression.type": "lz4",
    "acks": "all",
    **IDEMPOTENT_PRODUCER,
    "queue.buffering.max.messages": 1_000_000,
    "queue.buffering.max.kbytes": 1_048_576,
    "delivery.report.only.error": True,  # successes are counted as total - failures
}

_PACE_STEPS_PER_SECOND = 50  # paced sends go out in slices of rate/50 records (20 ms)
_METADATA_TIMEOUT_S = 10.0


@dataclass(frozen=True, slots=True, kw_only=True)
class ProduceReport:
    """What `produce` did. `delivered` excludes failed and undelivered records."""

    topic: str
    produced: int  # records handed to the producer
    delivered: int
    failed: int
    malformed: int  # generated malformed records among `produced`
    per_partition: Mapping[int, int] = field(default_factory=dict)
    elapsed_s: float = 0.0
    first_errors: tuple[str, ...] = ()

    @property
    def records_per_s(self) -> float:
        return self.produced / self.elapsed_s if self.elapsed_s > 0 else 0.0


class ProduceError(Exception):
    """Some records were not delivered; `report` tells how many and the first errors."""

    def __init__(self, report: ProduceReport) -> None:
        undelivered = report.produced - report.delivered
        super().__init__(
            f"{undelivered} of {report.produced} records not delivered to {report.topic}: "
            + "; ".join(report.first_errors or ("flush timed out",))
        )
        self.report = report


class DeliveryErrors:
    """Counts failed deliveries and keeps the first few reasons."""

    def __init__(self, *, keep: int = 5) -> None:
        self.count = 0
        self.first: list[str] = []
        self._keep = keep

    def __call__(self, error: KafkaError | None, message: Message) -> None:
        if error is None:
            return
        self.count += 1
        if len(self.first) < self._keep:
            self.first.append(f"partition {message.partition()}: {error.str()}")


def ensure_source_topic(kafka: KafkaSettings, topic: str, partitions: int) -> None:
    """Create the topic to produce into unless it exists, replicated as Mars's own topics."""
    admin = admin_client(kafka)
    ensure_topics(admin, [TopicPlan(name=topic, partitions=partitions)], Replication.of(kafka))


def produce(
    kafka: KafkaSettings,
    topic: str,
    config: GeneratorConfig,
    *,
    rate: float | None = None,
    pacer: RatePacer | None = None,
    strategy: PartitionStrategy = PartitionStrategy.KEY,
    chunk_size: int = BLOCK_SIZE,
    on_progress: ProgressCallback | None = None,
    producer_config: Mapping[str, Any] | None = None,
    flush_timeout_s: float = 120.0,
    clock: Clock = time.monotonic,
    sleep: Sleep = time.sleep,
) -> ProduceReport:
    """Produce the `config` stream to `topic` (which must exist) and wait for delivery.

    `rate` caps records per second (None: as fast as possible); a `pacer` instead lets the
    caller change the rate while the stream runs (`RatePacer.retime`). Keys are the records' `sip`
    with either strategy. Raises `ProduceError` (carrying the report) when any record failed
    or was still undelivered after `flush_timeout_s`.
    """
    errors = DeliveryErrors()
    own = {**THROUGHPUT_CONFIG, **(producer_config or {}), "on_delivery": errors}
    producer = Producer(client_config(kafka, own))
    chooser = PartitionChooser(
        strategy=strategy,
        partitions=partition_count(producer, topic, timeout_s=_METADATA_TIMEOUT_S),
    )
    if pacer is None:
        pacer = RatePacer(rate=rate, clock=clock, sleep=sleep)
    step = max(1, int(pacer.rate / _PACE_STEPS_PER_SECOND)) if pacer.rate else chunk_size
    started = clock()
    per_partition: Counter[int] = Counter()
    produced = malformed = 0
    for chunk in iter_chunks(config, chunk_size=chunk_size):
        partitions = chooser.choose(keys=chunk.keys, start_index=chunk.start_index)
        per_partition.update(partitions)
        malformed += len(chunk.malformed)
        for lo in range(0, len(chunk), step):
            pacer.wait_until_due(produced)
            hi = min(lo + step, len(chunk))
            for value, key, partition in zip(
                chunk.values[lo:hi], chunk.keys[lo:hi], partitions[lo:hi], strict=True
            ):
                produce_one(producer, topic, value, key, partition)
            produced += hi - lo
            producer.poll(0)
            if on_progress is not None:
                on_progress(produced, config.count)
    undelivered = producer.flush(flush_timeout_s)
    report = ProduceReport(
        topic=topic,
        produced=produced,
        delivered=produced - errors.count - undelivered,
        failed=errors.count,
        malformed=malformed,
        per_partition=dict(sorted(per_partition.items())),
        elapsed_s=clock() - started,
        first_errors=tuple(errors.first),
    )
    if report.delivered != produced:
        raise ProduceError(report)
    return report


def produce_one(producer: Producer, topic: str, value: bytes, key: bytes, partition: int) -> None:
    """Hand one record to librdkafka, waiting for queue space when it is full."""
    while True:
        try:
            producer.produce(topic, value, key, partition)
            return
        except BufferError:
            producer.poll(0.05)  # serve delivery reports so the local queue drains

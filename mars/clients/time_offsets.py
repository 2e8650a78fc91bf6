"""Where each partition of a topic holds records from a time on (`offsets_for_times`), and
whether Kafka still holds everything from then (a rewind's re-read needs it: docs/rewind.md).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaException, TopicPartition

from mars.clients.kafka_config import client_config
from mars.config import KafkaSettings


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionFrom:
    """Partition `partition`: the first offset whose record timestamp is at or after the time
    asked (`end` when none is), its low and high watermarks, and whether records that might
    be from that time were already deleted (retention)."""

    partition: int
    offset: int
    low: int
    high: int

    @property
    def truncated(self) -> bool:
        """Records below `low` are gone and the search landed on `low` itself: some of them
        may have been at or after the time."""
        return self.low > 0 and self.offset <= self.low and self.high > self.low


def offsets_from_time(
    kafka: KafkaSettings, topic: str, time_ms: int, *, timeout_s: float = 10.0
) -> list[PartitionFrom]:
    """Per partition of `topic`, in partition order, where records from `time_ms` start."""
    consumer = lookup_consumer(kafka)
    try:
        partitions = partitions_of(consumer, topic, timeout_s=timeout_s)
        found = consumer.offsets_for_times(
            [TopicPartition(topic, p, time_ms) for p in partitions], timeout=timeout_s
        )
        out: list[PartitionFrom] = []
        for tp in sorted(found, key=lambda t: t.partition):
            low, high = consumer.get_watermark_offsets(
                TopicPartition(topic, tp.partition), timeout=timeout_s, cached=False
            )
            offset = high if tp.offset < 0 else tp.offset
            out.append(PartitionFrom(partition=tp.partition, offset=offset, low=low, high=high))
        return out
    finally:
        consumer.close()


def lookup_consumer(kafka: KafkaSettings) -> Consumer:
    """A consumer that commits nothing, of a group of its own, reading committed records only:
    for looking up offsets and reading a few records (a rewind's checks)."""
    return Consumer(
        client_config(
            kafka,
            {
                "group.id": f"mars-rewind-{uuid.uuid4().hex[:8]}",
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
            },
        )
    )


def partitions_of(consumer: Consumer, topic: str, *, timeout_s: float) -> list[int]:
    """The partitions of `topic`, ascending; KafkaException when it has none."""
    described = consumer.list_topics(topic, timeout=timeout_s).topics.get(topic)
    if described is None or described.error is not None or not described.partitions:
        raise KafkaException(f"topic {topic} has no partitions")
    return sorted(described.partitions)

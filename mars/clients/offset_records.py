"""The first records of some partitions of a topic from given offsets, with each partition's
bounds: a rewind by offsets reads the event times there (docs/rewind.md)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from confluent_kafka import Consumer, TopicPartition

from mars.clients.time_offsets import lookup_consumer, partitions_of
from mars.config import KafkaSettings


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionRecords:
    """Partition `partition`: its low and high watermarks and, when the offset asked is within
    them, the values of its first records from that offset (tombstones left out)."""

    partition: int
    low: int
    high: int
    values: list[bytes] = field(default_factory=list)

    def holds(self, offset: int) -> bool:
        return self.low <= offset < self.high


def records_from_offsets(
    kafka: KafkaSettings,
    topic: str,
    offsets: Mapping[int, int],
    *,
    limit: int,
    timeout_s: float = 10.0,
) -> dict[int, PartitionRecords]:
    """Per partition of `offsets` that `topic` has, its bounds and up to `limit` values from
    its offset (none when the offset is outside the bounds)."""
    consumer = lookup_consumer(kafka)
    try:
        partitions = partitions_of(consumer, topic, timeout_s=timeout_s)
        found: dict[int, PartitionRecords] = {}
        for partition in sorted(set(offsets) & set(partitions)):
            low, high = consumer.get_watermark_offsets(
                TopicPartition(topic, partition), timeout=timeout_s, cached=False
            )
            found[partition] = PartitionRecords(partition=partition, low=low, high=high)
        wanted = {p: offsets[p] for p, bounds in found.items() if bounds.holds(offsets[p])}
        if wanted:
            consumer.assign([TopicPartition(topic, p, o) for p, o in wanted.items()])
            _read(consumer, topic, found, wanted, limit=limit, timeout_s=timeout_s)
        return found
    finally:
        consumer.close()


def _read(
    consumer: Consumer,
    topic: str,
    found: dict[int, PartitionRecords],
    wanted: Mapping[int, int],
    *,
    limit: int,
    timeout_s: float,
) -> None:
    """Fill `found[p].values` until each wanted partition has `limit` values or its position
    reached its high watermark (transaction markers take offsets too)."""
    open_partitions = set(wanted)
    deadline = time.monotonic() + timeout_s
    while open_partitions and time.monotonic() < deadline:
        for message in consumer.consume(num_messages=limit, timeout=0.5):
            partition = message.partition()
            if message.error() is not None or partition not in open_partitions:
                continue
            value = message.value()
            if value is not None:
                found[partition].values.append(value)
        positions = consumer.position([TopicPartition(topic, p) for p in open_partitions])
        for position in positions:
            records = found[position.partition]
            if len(records.values) >= limit or position.offset >= records.high:
                open_partitions.discard(position.partition)
                consumer.pause([TopicPartition(topic, position.partition)])

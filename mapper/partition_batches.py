"""A consumed batch -> topic -> partition -> `PartitionBatch` (offsets and values as parallel
lists, in offset order): the first step of every batch. The native consumer hands it over so
(built in Rust); confluent-kafka's messages are taken apart here, once per message.

About 0.2 microseconds per message (measured on consumed messages): reading the fields
column-wise with `map` and cutting the runs with NumPy was slower, so this stays one loop.
"""

from __future__ import annotations

import logging

from confluent_kafka import KafkaError, Message

from mars.clients.native_consumer import NativeConsumer, SourceConsumer
from mars.engine.records import PartitionBatch, TopicBatches

log = logging.getLogger(__name__)


def consume_by_partition(
    consumer: SourceConsumer, max_messages: int, timeout_s: float
) -> TopicBatches:
    """Up to `max_messages` records, waiting at most `timeout_s`, by topic and partition."""
    if isinstance(consumer, NativeConsumer):
        return consumer.consume_grouped(max_messages, timeout_s)
    return group_by_partition(consumer.consume(num_messages=max_messages, timeout=timeout_s))


def group_by_partition(messages: list[Message]) -> TopicBatches:
    """topic -> partition -> its records in offset order (errors logged and skipped, a
    tombstone's value read as b""). A consume batch comes in runs of one partition, so the
    lookup of the partition's lists happens once per run."""
    by_topic: TopicBatches = {}
    current: PartitionBatch | None = None
    current_topic: str | None = None
    for message in messages:
        error = message.error()
        if error is not None:
            if error.code() != KafkaError._PARTITION_EOF:
                log.warning("consumer error: %s", error)
            continue
        topic, partition = message.topic(), message.partition()
        if current is None or partition != current.partition or topic != current_topic:
            by_partition = by_topic.setdefault(topic, {})  # type: ignore[arg-type]
            current = by_partition.get(partition)  # type: ignore[arg-type]
            if current is None:
                current = by_partition[partition] = PartitionBatch(partition)  # type: ignore[index,arg-type]
            current_topic = topic
        current.offsets.append(message.offset())  # type: ignore[arg-type]
        current.values.append(message.value() or b"")
    return by_topic

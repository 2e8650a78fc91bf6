"""A consumed batch -> topic -> partition -> `PartitionBatch` (offsets and values as parallel
columns, in offset order): the first step of every batch. The native consumer hands it over so
(built in Rust, each partition's values one joined buffer); confluent-kafka's messages are
taken apart here, once per message.

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
    columns: dict[tuple[str, int], tuple[list[int], list[bytes]]] = {}
    run: tuple[str, int] | None = None
    offsets: list[int] = []
    values: list[bytes] = []
    for message in messages:
        error = message.error()
        if error is not None:
            if error.code() != KafkaError._PARTITION_EOF:
                log.warning("consumer error: %s", error)
            continue
        key = (message.topic(), message.partition())
        if key != run:
            offsets, values = columns.setdefault(key, ([], []))  # type: ignore[arg-type]
            run = key  # type: ignore[assignment]
        offsets.append(message.offset())  # type: ignore[arg-type]
        values.append(message.value() or b"")
    by_topic: TopicBatches = {}
    for (topic, partition), (offsets, values) in columns.items():
        by_topic.setdefault(topic, {})[partition] = PartitionBatch(partition, offsets, values)
    return by_topic

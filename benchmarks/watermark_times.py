"""When did the watermark pass each window end? Derived from the source topic itself.

Mars's watermark is the min over partitions of the largest event time seen, so it passes a
window end E at the moment the last partition receives its first record with event time >= E.
Reading the topic back, that is the max over partitions of the Kafka timestamp (CreateTime,
set by the producer) of each partition's first record with event time >= E.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence

from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from mars.clients import client_config
from mars.config import KafkaSettings


def crossing_times(records: Iterable[tuple[int, int]], ends_ms: Sequence[int]) -> dict[int, int]:
    """For one partition's `(event_ms, timestamp_ms)` records in offset order: for each end,
    the timestamp of the first record whose event time is >= end (pure)."""
    pending = sorted(ends_ms)
    found: dict[int, int] = {}
    index = 0
    running_max = None
    for event_ms, timestamp_ms in records:
        running_max = event_ms if running_max is None else max(running_max, event_ms)
        while index < len(pending) and running_max >= pending[index]:
            found[pending[index]] = timestamp_ms
            index += 1
        if index == len(pending):
            break
    return found


def watermark_passage(per_partition: Mapping[int, Mapping[int, int]]) -> dict[int, int]:
    """End -> the time every partition had crossed it (only ends crossed in all partitions)."""
    if not per_partition:
        return {}
    common = set.intersection(*(set(found) for found in per_partition.values()))
    return {end: max(found[end] for found in per_partition.values()) for end in sorted(common)}


def window_latencies(
    last_arrivals_s: Mapping[int, float],
    passage_ms: Mapping[int, int],
    *,
    window_ms: int,
    from_ms: int,
) -> list[float]:
    """Seconds from the watermark passing each window's end to the arrival of its last result
    row (`last_arrivals_s`: window start ms -> wall time), for the windows ending at or after
    `from_ms` whose passage is known (pure)."""
    latencies = []
    for start, arrival_s in sorted(last_arrivals_s.items()):
        end = start + window_ms
        if end in passage_ms and end >= from_ms:
            latencies.append(arrival_s - passage_ms[end] / 1000)
    return latencies


def read_event_times(kafka: KafkaSettings, topic: str) -> dict[int, list[tuple[int, int]]]:
    """Every record of `topic` as (event ms from the first CSV cell, Kafka timestamp ms)."""
    consumer = Consumer(
        client_config(
            kafka,
            {
                "group.id": f"bench-wm-{uuid.uuid4().hex[:8]}",
                "enable.auto.commit": False,
                "enable.partition.eof": False,
            },
        )
    )
    partitions = sorted(consumer.list_topics(topic, timeout=30).topics[topic].partitions)
    ends = {
        p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
        for p in partitions
    }
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
    out: dict[int, list[tuple[int, int]]] = {p: [] for p in partitions}
    pending = {p for p, end in ends.items() if end > 0}
    while pending:
        for message in consumer.consume(num_messages=10_000, timeout=1.0):
            if message.error() is not None:
                continue
            value = message.value() or b""
            partition, offset = message.partition(), message.offset()
            assert partition is not None and offset is not None
            cut = value.find(b",")
            try:
                event_ms = int(value[:cut]) * 1000
            except ValueError:
                continue
            out[partition].append((event_ms, message.timestamp()[1]))
            if offset + 1 >= ends[partition]:
                pending.discard(partition)
    consumer.close()
    return out

"""Read a unit's latest committed progress record from the compacted progress topic.

The unit's records all live in one partition (`partition_for(key)`), which the reader scans from
the beginning with `isolation.level=read_committed`. A read_committed consumer stops at the
partition's last stable offset (LSO): while any producer's transaction is open in the partition
the LSO is behind the high watermark and a record of ours committed after that point would be
invisible. So the scan only ends at an end-of-partition where position == high watermark, i.e.
no transaction is open; other owners' transactions last milliseconds, and a crashed producer's
open transaction is aborted by its unit's next owner (or by the transaction timeout).
"""

from __future__ import annotations

import time
import uuid

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition

from mars.clients.kafka_config import client_config
from mars.config import KafkaSettings
from reducer.progress_record import ProgressRecord, partition_for


class ProgressReadTimeoutError(TimeoutError):
    """The partition never reached a stable end within the timeout (a long open transaction)."""


def read_progress(
    *,
    kafka: KafkaSettings,
    topic: str,
    key: str,
    partitions: int,
    timeout_s: float = 90.0,
) -> ProgressRecord | None:
    """The value of the newest committed record with `key`, or None if there is none."""
    partition = partition_for(key, partitions)
    consumer = _consumer(kafka, isolation="read_committed")
    # A read_committed consumer's ListOffsets answers the LSO, not the high watermark.
    probe = _consumer(kafka, isolation="read_uncommitted")
    wanted = key.encode()
    latest: bytes | None = None
    found = False
    deadline = time.monotonic() + timeout_s
    tp = TopicPartition(topic, partition, OFFSET_BEGINNING)
    try:
        consumer.assign([tp])
        while True:
            if time.monotonic() > deadline:
                raise ProgressReadTimeoutError(
                    f"{topic}[{partition}] has no stable end after {timeout_s} s"
                )
            message = consumer.poll(0.5)
            if message is None:
                if _at_stable_end(consumer, probe, topic, partition):
                    break
                continue
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    if _at_stable_end(consumer, probe, topic, partition):
                        break
                    continue
                raise KafkaException(error)
            if message.key() == wanted:
                found = True
                latest = message.value()
    finally:
        consumer.close()
        probe.close()
    if not found or latest is None:  # a tombstone forgets the unit
        return None
    return ProgressRecord.from_bytes(latest)


def _consumer(kafka: KafkaSettings, *, isolation: str) -> Consumer:
    return Consumer(
        client_config(
            kafka,
            {
                "group.id": f"mars-progress-reader-{uuid.uuid4().hex}",
                "isolation.level": isolation,
                "enable.auto.commit": False,
                "enable.partition.eof": True,
                "auto.offset.reset": "earliest",
            },
        )
    )


def _at_stable_end(consumer: Consumer, probe: Consumer, topic: str, partition: int) -> bool:
    """True when the consumer's position is the high watermark: nothing open, nothing unread."""
    _, high = probe.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
    position = consumer.position([TopicPartition(topic, partition)])[0].offset
    if high == 0:
        return True
    return position >= 0 and position >= high

"""Read a unit's latest committed progress record from the compacted progress topic.

The unit's records all live in one partition (`partition_for(key)`), which the reader scans from
the beginning with `isolation.level=read_committed`. A read_committed consumer stops at the
partition's last stable offset (LSO): while any producer's transaction is open in the partition
the LSO is behind the high watermark and a record of ours committed after that point would be
invisible. So the scan ends only once its position reaches the high watermark *as it was when
the read started*: the caller has already run init_transactions for the unit's id, so every
record of the unit lies below that mark, and only transactions open at that moment can hold the
LSO back (other owners' last milliseconds; a crashed producer's is aborted by its unit's next
owner or by the transaction timeout). Transactions that open later do not matter: waiting for
a moment with none open in the partition starved owners when dozens of units committed into it.
"""

from __future__ import annotations

import threading
import time
import uuid

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    TopicPartition,
)

from mars.clients.kafka_config import client_config
from mars.config import KafkaSettings
from reducer.progress_record import ProgressRecord, partition_for

# Progress reads at once per process: each opens two Kafka clients beside the owners' producers,
# and a process holds at most about a thousand (confluent-kafka takes a thread-local-storage key
# per client: 660 owners of 100 tasks recovering at once failed with "Failed to initialize
# thread local storage", over and over).
READS_AT_ONCE = 8
_reads = threading.BoundedSemaphore(READS_AT_ONCE)


class ProgressReadTimeoutError(TimeoutError):
    """The partition did not become stable up to the read's end offset within the timeout (a long
    open transaction)."""


def read_progress(
    *,
    kafka: KafkaSettings,
    topic: str,
    key: str,
    partitions: int,
    timeout_s: float = 90.0,
) -> ProgressRecord | None:
    """The value of the newest committed record with `key`, or None if there is none. Call it
    after init_transactions of the key's unit: only records below the partition's end at the
    call are looked for."""
    with _reads:
        return _read(kafka=kafka, topic=topic, key=key, partitions=partitions, timeout_s=timeout_s)


def _read(
    *, kafka: KafkaSettings, topic: str, key: str, partitions: int, timeout_s: float
) -> ProgressRecord | None:
    partition = partition_for(key, partitions)
    target = _end_offset(kafka, topic, partition)
    consumer = _consumer(kafka, isolation="read_committed")
    try:
        consumer.assign([TopicPartition(topic, partition, OFFSET_BEGINNING)])
        return _scan(
            consumer,
            topic=topic,
            partition=partition,
            wanted=key.encode(),
            target=target,
            deadline=time.monotonic() + timeout_s,
            timeout_s=timeout_s,
        )
    finally:
        consumer.close()


def _scan(
    consumer: Consumer,
    *,
    topic: str,
    partition: int,
    wanted: bytes,
    target: int,
    deadline: float,
    timeout_s: float,
) -> ProgressRecord | None:
    """The newest committed record with key `wanted` below offset `target` (None: none, or a
    tombstone: it forgets the unit)."""
    latest: bytes | None = None
    while True:
        if time.monotonic() > deadline:
            raise ProgressReadTimeoutError(
                f"{topic}[{partition}] not stable up to offset {target} after {timeout_s} s"
            )
        message = consumer.poll(0.5)
        if message is None or _is_eof(message):
            if _read_through(consumer, topic, partition, target):
                break
            continue
        error = message.error()
        if error is not None:
            raise KafkaException(error)
        if message.key() == wanted:
            latest = message.value()
        # Records arrive in offset order: once one at `target - 1` or beyond is here, every
        # committed record below `target` was read (a steady stream may never give an EOF).
        if (message.offset() or 0) >= target - 1:
            break
    return None if latest is None else ProgressRecord.from_bytes(latest)


def _is_eof(message: Message) -> bool:
    error = message.error()
    return error is not None and error.code() == KafkaError._PARTITION_EOF


def _end_offset(kafka: KafkaSettings, topic: str, partition: int) -> int:
    """The partition's high watermark now (a read_committed consumer's ListOffsets answers the
    LSO instead, hence a read_uncommitted one)."""
    probe = _consumer(kafka, isolation="read_uncommitted")
    try:
        _, high = probe.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
        return int(high)
    finally:
        probe.close()


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


def _read_through(consumer: Consumer, topic: str, partition: int, target: int) -> bool:
    """True once the consumer's position reached `target` (the high watermark when the read
    started): every committed record below it was read."""
    if target == 0:
        return True
    position = consumer.position([TopicPartition(topic, partition)])[0].offset
    return position >= 0 and position >= target

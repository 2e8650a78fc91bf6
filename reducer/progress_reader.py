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

Each read scans with a consumer of its own, assigned from the beginning: a consumer reused for
a second read could hand it records fetched for the first, and one kept assigned for good
answers from a table that a broker restart's offset reset can leave older than its position.
The high watermark comes from one read_uncommitted probe per process and cluster (it holds no
position), replaced when it fails ([RdkafkaWatermarkUnknown]). A scan consumer is closed on a
daemon thread nobody waits for: a consumer's close can hang while the group coordinator does
not answer ([RdkafkaCloseHang]), and closes that hung held the read slots of a 50-task run's
reducer, whose owners then went silent for 11 minutes (the likeliest reading of its log). A
read that gets no slot within its timeout fails (the owner logs it and recovers again) instead
of waiting without end.
"""

from __future__ import annotations

import contextlib
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

# Progress reads at once per process: each opens a Kafka client beside the owners' producers,
# and a process holds at most about a thousand (confluent-kafka takes a thread-local-storage key
# per client: 660 owners of 100 tasks recovering at once failed with "Failed to initialize
# thread local storage", over and over).
READS_AT_ONCE = 8
_reads = threading.BoundedSemaphore(READS_AT_ONCE)
_Cluster = tuple[str, tuple[tuple[str, str], ...]]  # bootstrap servers, client properties
_probes: dict[_Cluster, Consumer] = {}
_probes_lock = threading.Lock()


class ProgressReadTimeoutError(TimeoutError):
    """The partition did not become stable up to the read's end offset within the timeout (a long
    open transaction), or no read slot came free within it."""


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
    started = time.monotonic()
    if not _reads.acquire(timeout=timeout_s):
        raise ProgressReadTimeoutError(f"no progress read slot came free in {timeout_s} s")
    try:
        left_s = max(0.0, timeout_s - (time.monotonic() - started))
        return _read(kafka=kafka, topic=topic, key=key, partitions=partitions, timeout_s=left_s)
    finally:
        _reads.release()


def close_readers() -> None:
    """Close the high-watermark probes (the process is stopping); a later read opens new ones."""
    with _probes_lock:
        probes = list(_probes.values())
        _probes.clear()
    for probe in probes:
        _close_in_background(probe)


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
        _close_in_background(consumer)


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
        message = consumer.poll(0.1)
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
    LSO instead, hence a read_uncommitted probe). A probe that fails is dropped and a new one
    asked once: after a broker was killed, a shared probe kept answering "Unknown partition"
    for minutes, without refreshing its metadata, while new clients read the partition."""
    cluster = (kafka.bootstrap_servers, tuple(sorted(kafka.client_properties.items())))
    try:
        return _ask_probe(kafka, cluster, TopicPartition(topic, partition))
    except KafkaException:
        return _ask_probe(kafka, cluster, TopicPartition(topic, partition))  # a new probe


def _ask_probe(kafka: KafkaSettings, cluster: _Cluster, tp: TopicPartition) -> int:
    """The cluster's probe's answer; a probe that fails is dropped before the error is raised."""
    with _probes_lock:
        probe = _probes.get(cluster)
        if probe is None:
            probe = _probes[cluster] = _consumer(kafka, isolation="read_uncommitted")
    try:
        _, high = probe.get_watermark_offsets(tp, timeout=10)
    except KafkaException:
        with _probes_lock:
            if _probes.get(cluster) is probe:
                del _probes[cluster]
        _close_in_background(probe)
        raise
    return int(high)


def _close_in_background(consumer: Consumer) -> None:
    def close() -> None:
        with contextlib.suppress(KafkaException, RuntimeError):
            consumer.close()

    threading.Thread(target=close, name="progress-reader-close", daemon=True).start()


def _consumer(kafka: KafkaSettings, *, isolation: str) -> Consumer:
    return Consumer(
        client_config(
            kafka,
            {
                "group.id": f"mars-progress-reader-{uuid.uuid4().hex}",
                "isolation.level": isolation,
                "enable.auto.commit": False,
                "enable.partition.eof": True,
                "fetch.wait.max.ms": 50,  # the scan's last fetch returns when it is through
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

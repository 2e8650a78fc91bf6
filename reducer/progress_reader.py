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

Reads of one partition share a scan: owners starting at once (the units of ten tasks, 8 progress
partitions) join the scan that waits for its turn in their partition, and it answers each of
them; a read that comes once that scan has started has one of its own. The condition above
holds for all of them: each joined after its own init_transactions, and the scan reads the
high watermark only after it stopped taking reads. Scanning once per key, 80 owners made 80
scans of the same 8 partitions, 8 at a time.

Each scan has a consumer of its own, assigned at the partition's log start offset: a
consumer reused for a second scan could hand it records fetched for the first, and one kept
assigned for good answers from a table that a broker restart's offset reset can leave older
than its position. The log start offset and the high watermark come from one read_uncommitted
probe per process and cluster (it holds no position), replaced when it fails
([RdkafkaWatermarkUnknown]). The scan is assigned that offset as a number, not as
OFFSET_BEGINNING: librdkafka resolves a logical offset with a ListOffsets request that, for a
consumer whose metadata has not come yet, it retries on a fixed 500 ms timer, so every scan of
a partition with records took half a second more (0.55 s against 0.06 s on a local broker).
A partition with nothing below the high watermark needs no scan at all.

A scan consumer is closed on a daemon thread nobody waits for: a consumer's close can hang
while the group coordinator does not answer ([RdkafkaCloseHang]), and closes that hung held the
scan slots of a 50-task run's reducer, whose owners then went silent for 11 minutes (the
likeliest reading of its log). A scan that gets no slot within its timeout fails, and with it
every read that joined it (each owner logs it and recovers again), instead of waiting without
end.
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from dataclasses import dataclass, field

from confluent_kafka import (
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    TopicPartition,
)

from mars.clients.kafka_config import client_config
from mars.config import KafkaSettings
from reducer.progress_record import ProgressRecord, partition_for

# Scans at once per process: each opens a Kafka client beside the owners' producers, and a
# process holds at most about a thousand (confluent-kafka takes a thread-local-storage key per
# client: 660 owners of 100 tasks recovering at once failed with "Failed to initialize thread
# local storage", over and over).
SCANS_AT_ONCE = 8
_scan_slots = threading.BoundedSemaphore(SCANS_AT_ONCE)
_Cluster = tuple[str, tuple[tuple[str, str], ...]]  # bootstrap servers, client properties
_Partition = tuple[_Cluster, str, int]  # and topic, partition
_probes: dict[_Cluster, Consumer] = {}
_probes_lock = threading.Lock()


class ProgressReadTimeoutError(TimeoutError):
    """The partition did not become stable up to the read's end offset within the timeout (a long
    open transaction), or no scan slot came free within it."""


@dataclass(slots=True)
class _SharedScan:
    """One scan of a partition and the reads it answers: the keys wanted, joined until it starts
    (`taking` False), then each key's newest value, or the error that ended it."""

    wanted: set[bytes] = field(default_factory=set)
    taking: bool = True
    found: dict[bytes, bytes] = field(default_factory=dict)
    error: BaseException | None = None
    done: threading.Event = field(default_factory=threading.Event)


_waiting: dict[_Partition, _SharedScan] = {}  # per partition, the scan still taking reads
_waiting_lock = threading.Lock()


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
    where = (_cluster(kafka), topic, partition_for(key, partitions))
    wanted = key.encode()
    with _waiting_lock:
        scan = _waiting.get(where)
        runs_it = scan is None
        if scan is None:
            scan = _waiting[where] = _SharedScan()
        scan.wanted.add(wanted)
    if runs_it:
        _run_scan(kafka, where, scan, timeout_s=timeout_s)
    elif not scan.done.wait(timeout_s):
        raise ProgressReadTimeoutError(f"{topic}[{where[2]}] not read in {timeout_s} s")
    if scan.error is not None:
        raise scan.error
    value = scan.found.get(wanted)
    return None if value is None else ProgressRecord.from_bytes(value)


def _run_scan(
    kafka: KafkaSettings, where: _Partition, scan: _SharedScan, *, timeout_s: float
) -> None:
    """Take a scan slot, stop `scan` taking reads, scan for its keys; `scan.done` in any case."""
    _, topic, partition = where
    started = time.monotonic()
    try:
        if not _scan_slots.acquire(timeout=timeout_s):
            raise ProgressReadTimeoutError(f"no progress scan slot came free in {timeout_s} s")
        try:
            with _waiting_lock:
                scan.taking = False
                del _waiting[where]
            left_s = max(0.0, timeout_s - (time.monotonic() - started))
            scan.found = _read(
                kafka,
                topic=topic,
                partition=partition,
                wanted=frozenset(scan.wanted),
                timeout_s=left_s,
            )
        finally:
            _scan_slots.release()
    except BaseException as exc:
        scan.error = exc
    finally:
        with _waiting_lock:
            if scan.taking:  # no slot came: the reads joined since fail with it
                scan.taking = False
                del _waiting[where]
        scan.done.set()


def close_readers() -> None:
    """Close the high-watermark probes (the process is stopping); a later read opens new ones."""
    with _probes_lock:
        probes = list(_probes.values())
        _probes.clear()
    for probe in probes:
        _close_in_background(probe)


def _read(
    kafka: KafkaSettings, *, topic: str, partition: int, wanted: frozenset[bytes], timeout_s: float
) -> dict[bytes, bytes]:
    """Each key of `wanted` with a committed record in the partition: its newest value."""
    start, target = _bounds(kafka, topic, partition)
    if target <= start:
        return {}  # no record below the high watermark
    consumer = _consumer(kafka, isolation="read_committed")
    try:
        consumer.assign([TopicPartition(topic, partition, start)])
        return _scan(
            consumer,
            topic=topic,
            partition=partition,
            wanted=wanted,
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
    wanted: frozenset[bytes],
    target: int,
    deadline: float,
    timeout_s: float,
) -> dict[bytes, bytes]:
    """The newest committed record of each key of `wanted` below offset `target` (a key without
    one, or whose newest is a tombstone, which forgets the unit, is left out)."""
    latest: dict[bytes, bytes | None] = {}
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
        key = message.key()
        if key in wanted:
            latest[key] = message.value()
        # Records arrive in offset order: once one at `target - 1` or beyond is here, every
        # committed record below `target` was read (a steady stream may never give an EOF).
        if (message.offset() or 0) >= target - 1:
            break
    return {key: value for key, value in latest.items() if value is not None}


def _is_eof(message: Message) -> bool:
    error = message.error()
    return error is not None and error.code() == KafkaError._PARTITION_EOF


def _bounds(kafka: KafkaSettings, topic: str, partition: int) -> tuple[int, int]:
    """The partition's log start offset and high watermark now (a read_committed consumer's
    ListOffsets answers the LSO instead, hence a read_uncommitted probe). A probe that fails
    is dropped and a new one asked once: after a broker was killed, a shared probe kept
    answering "Unknown partition" for minutes, without refreshing its metadata, while new
    clients read the partition."""
    cluster = _cluster(kafka)
    try:
        return _ask_probe(kafka, cluster, TopicPartition(topic, partition))
    except KafkaException:
        return _ask_probe(kafka, cluster, TopicPartition(topic, partition))  # a new probe


def _cluster(kafka: KafkaSettings) -> _Cluster:
    return (kafka.bootstrap_servers, tuple(sorted(kafka.client_properties.items())))


def _ask_probe(kafka: KafkaSettings, cluster: _Cluster, tp: TopicPartition) -> tuple[int, int]:
    """The cluster's probe's answer; a probe that fails is dropped before the error is raised."""
    with _probes_lock:
        probe = _probes.get(cluster)
        if probe is None:
            probe = _probes[cluster] = _consumer(kafka, isolation="read_uncommitted")
    try:
        low, high = probe.get_watermark_offsets(tp, timeout=10)
    except KafkaException:
        with _probes_lock:
            if _probes.get(cluster) is probe:
                del _probes[cluster]
        _close_in_background(probe)
        raise
    return int(low), int(high)


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
    position = consumer.position([TopicPartition(topic, partition)])[0].offset
    return position >= 0 and position >= target

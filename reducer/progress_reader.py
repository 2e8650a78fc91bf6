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

import contextlib
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field

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

# Progress reads at once per process. Each read borrows a pair of long-lived consumers from
# `_POOL` instead of opening two clients and closing them again: a process of hundreds of owners
# recovering at once opened and closed thousands of clients (confluent-kafka takes a thread-local-
# storage key per client: 660 owners of 100 tasks failed with "Failed to initialize thread local
# storage"), and a consumer's close can hang for good while the group coordinator does not answer
# (librdkafka #3740), which held every later read behind the hung ones: 50 tasks' owners went
# silent for 11 minutes after the broker fenced itself under load.
READS_AT_ONCE = 8
IDLE_CLOSE_S = 60.0  # a pair unused this long is closed (a test's cluster that is gone)


class ProgressReadTimeoutError(TimeoutError):
    """The partition did not become stable up to the read's end offset within the timeout (a long
    open transaction), or no reader came free within it."""


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
    deadline = time.monotonic() + timeout_s
    partition = partition_for(key, partitions)
    with _POOL.reader(kafka, deadline=deadline) as reader:
        _, high = reader.probe.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
        reader.scan.assign([TopicPartition(topic, partition, OFFSET_BEGINNING)])
        return _scan(
            reader.scan,
            topic=topic,
            partition=partition,
            wanted=key.encode(),
            target=int(high),
            deadline=deadline,
            timeout_s=timeout_s,
        )


@dataclass(slots=True, kw_only=True)
class _Reader:
    """A read_uncommitted probe (a read_committed consumer's ListOffsets answers the LSO, not
    the high watermark) and a read_committed consumer that scans one partition at a time."""

    probe: Consumer
    scan: Consumer
    last_used: float = field(default_factory=time.monotonic)

    @classmethod
    def open(cls, kafka: KafkaSettings) -> _Reader:
        return cls(
            probe=_consumer(kafka, isolation="read_uncommitted"),
            scan=_consumer(kafka, isolation="read_committed"),
        )

    def close_in_background(self) -> None:
        """Close both without waiting: a close that hangs holds only its own daemon thread."""

        def close() -> None:
            for consumer in (self.scan, self.probe):
                with contextlib.suppress(KafkaException, RuntimeError):
                    consumer.close()

        threading.Thread(target=close, name="progress-reader-close", daemon=True).start()


class _ReaderPool:
    """At most `READS_AT_ONCE` readers lent at a time; idle ones kept per cluster for reuse."""

    def __init__(self) -> None:
        self._slots = threading.BoundedSemaphore(READS_AT_ONCE)
        self._lock = threading.Lock()
        self._idle: dict[tuple[str, tuple[tuple[str, str], ...]], list[_Reader]] = {}
        self.opened = 0  # readers opened in this process (tests check the reuse)

    @contextlib.contextmanager
    def reader(self, kafka: KafkaSettings, *, deadline: float) -> Iterator[_Reader]:
        if not self._slots.acquire(timeout=max(0.0, deadline - time.monotonic())):
            raise ProgressReadTimeoutError(f"no progress reader came free in time ({kafka})")
        try:
            reader = self._take(kafka)
            reusable = False
            try:
                yield reader
                reusable = True
            finally:
                self._give_back(kafka, reader, reusable=reusable)
        finally:
            self._slots.release()

    def _take(self, kafka: KafkaSettings) -> _Reader:
        now = time.monotonic()
        with self._lock:
            stale = [
                reader
                for readers in self._idle.values()
                for reader in readers
                if now - reader.last_used > IDLE_CLOSE_S
            ]
            for readers in self._idle.values():
                readers[:] = [reader for reader in readers if reader not in stale]
            idle = self._idle.get(_cluster_key(kafka))
            reader = idle.pop() if idle else None
            if reader is None:
                self.opened += 1
        for old in stale:
            old.close_in_background()
        return reader if reader is not None else _Reader.open(kafka)

    def _give_back(self, kafka: KafkaSettings, reader: _Reader, *, reusable: bool) -> None:
        if reusable:
            try:
                reader.scan.unassign()
            except KafkaException:
                reusable = False
        if not reusable:  # an error mid-read: its state is unknown, start a fresh pair next time
            reader.close_in_background()
            return
        reader.last_used = time.monotonic()
        with self._lock:
            self._idle.setdefault(_cluster_key(kafka), []).append(reader)

    def close_all(self) -> None:
        with self._lock:
            readers = [reader for idle in self._idle.values() for reader in idle]
            self._idle.clear()
        for reader in readers:
            reader.close_in_background()


def close_readers() -> None:
    """Close the idle readers (the process is stopping); a later read opens new ones."""
    _POOL.close_all()


def _cluster_key(kafka: KafkaSettings) -> tuple[str, tuple[tuple[str, str], ...]]:
    return kafka.bootstrap_servers, tuple(sorted(kafka.client_properties.items()))


_POOL = _ReaderPool()


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
        if message.topic() != topic or message.partition() != partition:
            continue  # fetched for the reader's previous read, before its unassign
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

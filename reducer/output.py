"""`TransactionalOutput`: one Kafka transactional producer per owned unit.

The transactional id is stable per unit, `mars.reducer.<task>.<bucket>`: `start()`
(init_transactions) fences every earlier producer with that id, a zombie owner's next commit
fails with PRODUCER_FENCED, and a transaction the previous owner left open is aborted. `commit`
writes the closed windows' results, late records and the unit's progress record in ONE
transaction, so a read_committed consumer sees all of them or none. A window's results come
as `RecordRun`s (columns of keys and values), other records as `OutRecord`s; all are written
compressed as `reducer.output_compression` says.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import NamedTuple

from confluent_kafka import KafkaError, KafkaException, Producer

from mars.clients.kafka_config import IDEMPOTENT_PRODUCER, client_config
from mars.config import KafkaSettings, OutputCompression

_ANY_PARTITION = -1  # librdkafka's RD_KAFKA_PARTITION_UA: the partitioner picks
OUTPUT_QUEUE_MESSAGES = 10_000  # records not yet acked by the broker, at most (a full queue waits)

_FENCED_CODES = frozenset(
    {
        # A call refused because the producer has raised a fatal error already: a produce()
        # after AddPartitionsToTxn's answer told it of its fencing, mid-transaction. The error
        # it carries is not itself flagged fatal.
        KafkaError._FATAL,
        KafkaError._FENCED,
        KafkaError.PRODUCER_FENCED,
        KafkaError.INVALID_PRODUCER_EPOCH,
        KafkaError.TRANSACTION_COORDINATOR_FENCED,
    }
)


class OutputError(RuntimeError):
    """The transaction did not commit (it was aborted or its outcome is unknown).

    The owner must rebuild its state from the committed progress: its in-memory windows may
    already have been popped for the failed transaction.
    """


class FencedError(OutputError):
    """Another producer with the same transactional id took over: this owner is a zombie."""


class OutRecord(NamedTuple):
    """One record to write in the transaction (partition None: the default partitioner). A
    tuple, not a frozen dataclass: a closing window makes one per group, and a frozen
    dataclass's `__init__` cost 2.7 microseconds each (0.4 s of 150,000 records)."""

    topic: str
    key: bytes
    value: bytes | None  # None: a tombstone (a compacted topic drops the key)
    partition: int | None = None


class RecordRun(NamedTuple):
    """Records of one topic for the default partitioner, as columns of keys and values: a
    closed window's results, a slice at a time, handed to librdkafka without a Python object
    per record (docs/reducer.md, "Output producers": 0.4 CPU microseconds a record against 1.1
    as `OutRecord`s)."""

    topic: str
    keys: Sequence[bytes]
    values: Sequence[bytes]

    def records(self) -> Iterator[OutRecord]:
        topic = self.topic
        return (
            OutRecord(topic, key, value) for key, value in zip(self.keys, self.values, strict=True)
        )


ToWrite = OutRecord | RecordRun  # what a transaction is given, in order


def flat_records(items: Iterable[ToWrite]) -> Iterator[OutRecord]:
    """`items` one record at a time (fakes and tests read them so)."""
    for item in items:
        if isinstance(item, RecordRun):
            yield from item.records()
        else:
            yield item


def transactional_id(task_id: str, bucket: int) -> str:
    return f"mars.reducer.{task_id}.{bucket}"


class TransactionalOutput:
    """A transactional producer; not thread-safe (one owner thread uses it)."""

    def __init__(
        self,
        *,
        kafka: KafkaSettings,
        transactional_id: str,
        transaction_timeout_ms: int,
        compression: OutputCompression = "none",
        timeout_s: float = 30.0,
    ) -> None:
        self.transactional_id = transactional_id
        self._timeout_s = timeout_s
        self._producer = Producer(
            client_config(
                kafka,
                {
                    "transactional.id": transactional_id,
                    "transaction.timeout.ms": transaction_timeout_ms,
                    **IDEMPOTENT_PRODUCER,
                    "linger.ms": 5,
                    "compression.type": compression,
                    # librdkafka keeps a copy of each record (about 460 B with its overhead)
                    # until the broker acks it; by default up to 100,000 of them, which made a
                    # closing window's records the reducer's memory peak at 300,000 groups.
                    "queue.buffering.max.messages": OUTPUT_QUEUE_MESSAGES,
                },
            )
        )
        self._in_transaction = False
        # False once fenced, or once an abort failed (a transaction may still be open): the
        # producer must not be used again, and what it held must be fenced by the next holder.
        self.usable = True

    def start(self) -> None:
        """init_transactions: fence older producers of this id and abort their open work."""
        try:
            self._producer.init_transactions(self._timeout_s)
        except KafkaException as exc:
            raise _classify(exc) from exc

    def commit(self, records: Iterable[ToWrite]) -> None:
        """Write `records` atomically; raises `FencedError` or `OutputError` on failure."""
        try:
            self._producer.begin_transaction()
            self._in_transaction = True
            for item in records:
                if isinstance(item, RecordRun):
                    self._produce_run(item)
                else:
                    self._produce(item.topic, item.value, item.key, item.partition)
            self._commit_with_retries()
            self._in_transaction = False
        except KafkaException as exc:
            error = _classify(exc)
            if isinstance(error, FencedError):
                self.usable = False
            else:
                self.abort()
            raise error from exc

    def abort(self) -> None:
        """Abort the open transaction, if any (best effort: a fenced producer cannot)."""
        if not self._in_transaction:
            return
        self._in_transaction = False
        # Fenced or fatal: the broker aborts it at the next init or at the transaction timeout.
        try:
            self._producer.abort_transaction(self._timeout_s)
        except KafkaException:
            self.usable = False

    def close(self) -> None:
        """Release the producer. Never raises: it runs in the owner's `finally`, where a fenced
        producer's error (its flush raises `_FENCED`) would hide why the owner stopped."""
        self.abort()
        with contextlib.suppress(KafkaException):
            self._producer.flush(0)

    def _produce_run(self, run: RecordRun) -> None:
        produce, topic = self._producer.produce, run.topic
        for key, value in zip(run.keys, run.values, strict=True):
            try:  # positional: parsing keyword arguments cost more than librdkafka's work
                produce(topic, value, key)
            except BufferError:
                self._produce(topic, value, key, None)

    def _produce(self, topic: str, value: bytes | None, key: bytes, partition: int | None) -> None:
        while True:
            try:
                self._producer.produce(
                    topic, value, key, _ANY_PARTITION if partition is None else partition
                )
                return
            except BufferError:
                self._producer.poll(0.05)  # local queue full: let deliveries drain

    def _commit_with_retries(self) -> None:
        deadline = time.monotonic() + self._timeout_s
        while True:
            try:
                self._producer.commit_transaction(self._timeout_s)
                return
            except KafkaException as exc:
                error = exc.args[0]
                if error.retriable() and time.monotonic() < deadline:
                    continue
                raise


def _classify(exc: KafkaException) -> OutputError:
    error = exc.args[0]
    if isinstance(error, KafkaError) and (error.code() in _FENCED_CODES or error.fatal()):
        return FencedError(f"{error}")
    return OutputError(f"{error}")

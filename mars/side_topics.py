"""Late and dead-letter records to the task's side topics (at-least-once, before the apply).

Shared by the mapper and the Spark backfill. Each side record carries the original bytes, the
key `<source>/<partition>/<offset>` (source = topic, or file for a file backfill; consumers
dedupe on it: a crash between the flush and the Redis apply re-sends the batch's side records)
and the headers `mars.reason` and `mars.source`. `publish` flushes and raises `SideTopicError`
unless every record was acknowledged, so Redis never counts a record whose side copy is missing.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Protocol

from confluent_kafka import KafkaError, Message, Producer

from mars.clients.kafka_config import IDEMPOTENT_PRODUCER, client_config
from mars.config import KafkaSettings
from mars.engine.records import RejectedRecord
from mars.tasks.spec import TaskSpec

log = logging.getLogger(__name__)

REASON_HEADER = "mars.reason"
SOURCE_HEADER = "mars.source"


class SideTopicError(Exception):
    """Late or dead-letter records could not be delivered; the batch is retried and nothing is
    written to Redis before they are."""


class SideRecordSink(Protocol):
    """Where a batch's late and bad records go before its partials are applied."""

    def publish(
        self,
        spec: TaskSpec,
        *,
        source: str,
        bad: Sequence[RejectedRecord],
        late: Sequence[RejectedRecord],
    ) -> None: ...


def source_label(source: str, record: RejectedRecord) -> str:
    return f"{source}/{record.partition}/{record.offset}"


class SideTopicProducer:
    """Produces side records with an idempotent producer and waits for every acknowledgement."""

    def __init__(self, producer: Producer, *, flush_timeout_s: float = 30.0) -> None:
        self._producer = producer
        self._flush_timeout_s = flush_timeout_s
        self._errors: list[str] = []

    @classmethod
    def connect(cls, kafka: KafkaSettings) -> SideTopicProducer:
        producer = Producer(
            client_config(
                kafka,
                {
                    **IDEMPOTENT_PRODUCER,
                    "acks": "all",
                    "linger.ms": 5,
                    "compression.type": "lz4",
                },
            )
        )
        return cls(producer)

    def publish(
        self,
        spec: TaskSpec,
        *,
        source: str,
        bad: Sequence[RejectedRecord],
        late: Sequence[RejectedRecord],
    ) -> None:
        """Send and wait for every acknowledgement; `source` names the topic or the file."""
        if not bad and not late:
            return
        self._errors.clear()
        for topic, records in ((spec.dead_letter_topic, bad), (spec.late_topic, late)):
            for record in records:
                label = source_label(source, record)
                self._produce(topic, label, record)
        remaining = self._producer.flush(self._flush_timeout_s)
        if remaining or self._errors:
            detail = self._errors[0] if self._errors else f"{remaining} records not acknowledged"
            raise SideTopicError(f"task {spec.id}: side records not delivered: {detail}")

    def _produce(self, topic: str, label: str, record: RejectedRecord) -> None:
        headers: list[tuple[str, str | bytes | None]] = [
            (REASON_HEADER, record.reason.encode()),
            (SOURCE_HEADER, label.encode()),
        ]
        while True:
            try:
                self._producer.produce(
                    topic,
                    value=record.value,
                    key=label.encode(),
                    headers=headers,
                    on_delivery=self._on_delivery,
                )
                return
            except BufferError:  # local queue full: let deliveries drain, then go on
                self._producer.poll(0.1)

    def _on_delivery(self, error: KafkaError | None, _message: Message) -> None:
        if error is not None:
            self._errors.append(str(error))

    def close(self) -> None:
        self._producer.flush(self._flush_timeout_s)

"""Bad and late backfill records to the task's side topics, in the mappers' format.

Same shape as the live mappers' side records: the original bytes as the value, the key
`<source>/<partition>/<offset>` (consumers dedupe on it: a retried chunk re-sends its side
records), and the headers `mars.reason` and `mars.source`. Published and flushed *before* the
chunk is applied to Redis (at-least-once), so Redis never counts a record whose copy is missing.
"""

from __future__ import annotations

from collections.abc import Sequence

from confluent_kafka import KafkaError, KafkaException, Message, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from mars.engine.records import RejectedRecord
from mars.tasks.spec import TaskSpec

REASON_HEADER = "mars.reason"
SOURCE_HEADER = "mars.source"


class SideRecordError(Exception):
    """Side records were not acknowledged; the chunk must not be applied."""


class SideRecordPublisher:
    """An idempotent producer for one executor task's dead-letter and late records."""

    def __init__(self, bootstrap_servers: str, *, flush_timeout_s: float = 60.0) -> None:
        self._producer = Producer(
            {
                "bootstrap.servers": bootstrap_servers,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 5,
                "compression.type": "lz4",
            }
        )
        self._flush_timeout_s = flush_timeout_s
        self._errors: list[str] = []

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
                self._produce(topic, f"{source}/{record.partition}/{record.offset}", record)
        remaining = self._producer.flush(self._flush_timeout_s)
        if remaining or self._errors:
            detail = self._errors[0] if self._errors else f"{remaining} records not acknowledged"
            raise SideRecordError(f"task {spec.id}: side records not delivered: {detail}")

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
            except BufferError:  # local queue full: let deliveries drain
                self._producer.poll(0.1)

    def _on_delivery(self, error: KafkaError | None, _message: Message) -> None:
        if error is not None:
            self._errors.append(str(error))


def ensure_side_topics(
    bootstrap_servers: str, spec: TaskSpec, *, partitions: int, replication_factor: int
) -> None:
    """Create the task's dead-letter and late topics if they do not exist yet."""
    admin = AdminClient({"bootstrap.servers": bootstrap_servers})
    wanted = [spec.dead_letter_topic, spec.late_topic]
    futures = admin.create_topics(
        [
            NewTopic(t, num_partitions=partitions, replication_factor=replication_factor)
            for t in wanted
        ]
    )
    for future in futures.values():
        try:
            future.result(timeout=30)
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise

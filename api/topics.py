"""The Kafka side of registering a task: the source topic must exist; the output (compacted),
late and dead-letter topics are created.

The output topic is compacted because results are keyed by (window, group): a consumer that
reads it from the beginning gets the final record of every window and group, and Kafka may drop
older duplicates of the same key.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from api.errors import BackendUnavailableError
from mars.config import KafkaSettings
from mars.tasks.spec import TaskSpec

COMPACTED = {"cleanup.policy": "compact"}


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicPlan:
    """One topic to create and its configuration."""

    name: str
    config: dict[str, str]


def plan_task_topics(spec: TaskSpec) -> tuple[TopicPlan, ...]:
    return (
        TopicPlan(name=spec.output_topic, config=dict(COMPACTED)),
        TopicPlan(name=spec.late_topic, config={}),
        TopicPlan(name=spec.dead_letter_topic, config={}),
    )


class TaskTopics:
    """Creates and inspects a task's topics through the Kafka admin API."""

    def __init__(
        self, *, kafka: KafkaSettings, timeout_s: float = 15.0, metadata_grace_s: float = 1.0
    ) -> None:
        self._settings = kafka
        self._timeout_s = timeout_s
        self._metadata_grace_s = metadata_grace_s
        self._admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})

    def existing(self) -> set[str]:
        """Names of all topics. A full listing, never a metadata request for one topic name,
        because that can auto-create the topic on brokers with auto.create.topics.enable."""
        try:
            metadata = self._admin.list_topics(timeout=self._timeout_s)
        except KafkaException as exc:
            raise BackendUnavailableError(f"Kafka: {exc}") from exc
        return set(metadata.topics)

    def exists(self, topic: str) -> bool:
        """Whether the topic is listed; asks again for a moment, because a topic created just
        before may not be in the broker's metadata yet."""
        deadline = time.monotonic() + self._metadata_grace_s
        while topic not in self.existing():
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.2)
        return True

    def create_for(self, spec: TaskSpec) -> None:
        """Create the task's output, late and dead-letter topics; existing ones are kept."""
        plans = plan_task_topics(spec)
        new_topics = [
            NewTopic(
                plan.name,
                num_partitions=self._settings.result_partitions,
                replication_factor=self._settings.replication_factor,
                config=plan.config,
            )
            for plan in plans
        ]
        futures = self._admin.create_topics(new_topics, request_timeout=self._timeout_s)
        for name, future in futures.items():
            try:
                future.result(timeout=self._timeout_s)
            except KafkaException as exc:
                if exc.args and exc.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS:
                    continue
                raise BackendUnavailableError(f"Kafka: creating topic {name}: {exc}") from exc

    def delete_for(self, spec: TaskSpec) -> None:
        """Delete the task's output, late and dead-letter topics (missing ones are ignored)."""
        names = [plan.name for plan in plan_task_topics(spec)]
        futures = self._admin.delete_topics(names, request_timeout=self._timeout_s)
        for name, future in futures.items():
            try:
                future.result(timeout=self._timeout_s)
            except KafkaException as exc:
                if exc.args and exc.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                    continue
                raise BackendUnavailableError(f"Kafka: deleting topic {name}: {exc}") from exc

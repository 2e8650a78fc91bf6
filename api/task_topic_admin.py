"""The Kafka side of registering a task: the source topic must exist; the task's own topics
are created (`mars.tasks.topics`, the one home of their names and settings)."""

from __future__ import annotations

import time

from api.errors import BackendUnavailableError
from mars.clients import admin_client
from mars.config import KafkaSettings
from mars.tasks.spec import TaskSpec
from mars.tasks.topics import (
    TopicError,
    delete_task_topics,
    ensure_task_topics,
    existing_topics,
)


class TaskTopicAdmin:
    """Creates and inspects a task's topics through the Kafka admin API."""

    def __init__(
        self, *, kafka: KafkaSettings, timeout_s: float = 15.0, metadata_grace_s: float = 1.0
    ) -> None:
        self._settings = kafka
        self._timeout_s = timeout_s
        self._metadata_grace_s = metadata_grace_s
        self._admin = admin_client(kafka)

    def _exists_now(self, topic: str) -> bool:
        try:
            return bool(existing_topics(self._admin, [topic], timeout_s=self._timeout_s))
        except TopicError as exc:
            raise BackendUnavailableError(f"Kafka: {exc}") from exc

    def exists(self, topic: str) -> bool:
        """Whether the topic exists; asks again for a moment, because a topic created just
        before may not be in the broker's metadata yet."""
        deadline = time.monotonic() + self._metadata_grace_s
        while not self._exists_now(topic):
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.2)
        return True

    def create_for(self, spec: TaskSpec) -> None:
        """Create the task's output, late and dead-letter topics; existing ones are kept."""
        try:
            ensure_task_topics(self._admin, spec, self._settings, timeout_s=self._timeout_s)
        except TopicError as exc:
            raise BackendUnavailableError(f"Kafka: {exc}") from exc

    def delete_for(self, spec: TaskSpec) -> None:
        """Delete the task's output, late and dead-letter topics (missing ones are ignored)."""
        try:
            delete_task_topics(self._admin, spec, self._settings, timeout_s=self._timeout_s)
        except TopicError as exc:
            raise BackendUnavailableError(f"Kafka: {exc}") from exc

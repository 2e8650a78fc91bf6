"""What Kafka says about a task's topics, against what `mars.tasks.topics` plans for them."""

from __future__ import annotations

import time

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

from mars.config import KafkaSettings
from mars.tasks.spec import TaskSpec
from mars.tasks.topics import partition_count, task_topic_plans

TopicSettings = dict[str, tuple[int, str]]  # topic -> (partitions, cleanup.policy)


def topic_config(admin: AdminClient, topic: str, *, timeout_s: float = 30.0) -> dict[str, str]:
    """The topic's configuration (name -> value). A topic just created is known to its
    controller before every broker: on several brokers the one asked may answer "unknown
    topic" for a moment, so that answer is asked again until `timeout_s`."""
    resource = ConfigResource(ResourceType.TOPIC, topic)
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            entries = admin.describe_configs([resource])[resource].result(timeout=timeout_s)
            return {name: entry.value for name, entry in entries.items()}
        except KafkaException as exc:
            unknown = exc.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART
            if not unknown or time.monotonic() >= deadline:
                raise
        time.sleep(0.2)


def topic_settings(admin: AdminClient, names: list[str]) -> TopicSettings:
    return {
        name: (partition_count(admin, name), topic_config(admin, name)["cleanup.policy"])
        for name in names
    }


def assert_task_topics_as_planned(admin: AdminClient, spec: TaskSpec, kafka: KafkaSettings) -> None:
    """The task's topics exist with the partitions and cleanup policy of their plan."""
    plans = task_topic_plans(spec, kafka)
    wanted = {p.name: (p.partitions, p.config.get("cleanup.policy", "delete")) for p in plans}
    assert topic_settings(admin, list(wanted)) == wanted

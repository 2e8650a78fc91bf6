"""What Kafka says about a task's topics, against what `mars.tasks.topics` plans for them."""

from __future__ import annotations

from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

from mars.config import KafkaSettings
from mars.tasks.spec import TaskSpec
from mars.tasks.topics import partition_count, task_topic_plans

TopicSettings = dict[str, tuple[int, str]]  # topic -> (partitions, cleanup.policy)


def topic_settings(admin: AdminClient, names: list[str]) -> TopicSettings:
    resources = [ConfigResource(ResourceType.TOPIC, name) for name in names]
    found: TopicSettings = {}
    for resource, future in admin.describe_configs(resources).items():
        entries = future.result(timeout=10)
        found[resource.name] = (
            partition_count(admin, resource.name),
            entries["cleanup.policy"].value,
        )
    return found


def assert_task_topics_as_planned(admin: AdminClient, spec: TaskSpec, kafka: KafkaSettings) -> None:
    """The task's topics exist with the partitions and cleanup policy of their plan."""
    plans = task_topic_plans(spec, kafka)
    wanted = {p.name: (p.partitions, p.config.get("cleanup.policy", "delete")) for p in plans}
    assert topic_settings(admin, list(wanted)) == wanted

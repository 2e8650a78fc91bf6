"""Whichever role creates a task's topics first, they get the same configuration: the API on
registration, a `mars mapper` when it starts mapping the task, a `mars reducer` when it starts
owning a unit of it (the Spark backfill: `spark/test_backfill.py`). Each role gets a task of its
own and is the only one that touches it."""

from __future__ import annotations

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from api.task_topic_admin import TaskTopicAdmin
from devtools.local import LocalCluster
from mars.config import Settings
from mars.registry import TaskRegistry
from mars.sql import parse_task
from mars.tasks.spec import TaskSpec
from mars.tasks.topics import (
    Replication,
    TopicPlan,
    delete_task_topics,
    ensure_topics,
    existing_topics,
    task_topic_plans,
)
from tests.integration.pipeline import PipelineProcesses, wait_for
from tests.integration.task_topics import assert_task_topics_as_planned, topic_settings

pytestmark = pytest.mark.integration


@pytest.mark.timeout(180)
def test_every_role_creates_a_tasks_topics_alike(
    local_cluster: LocalCluster,
    settings: Settings,
    kafka_admin: AdminClient,
    zk_client: KazooClient,
    zk_root: str,
    unique_name: str,
) -> None:
    source = f"{unique_name}_src"
    kafka_admin.create_topics([NewTopic(source, num_partitions=2)])[source].result(timeout=30)
    specs = {
        role: parse_task(
            f"SELECT type, count(*) FROM {source} GROUP BY type WINDOWING 60 s",
            task_id=f"{unique_name}{role[0]}",
        )
        for role in ("api", "mapper", "reducer")
    }
    procs = PipelineProcesses(
        cluster=local_cluster,
        name=unique_name,
        env={"MARS_ZOOKEEPER__ROOT": zk_root, "MARS_MAPPER__GROUP_ID": f"m-{unique_name}"},
    )
    registry = TaskRegistry(zk_client, root=zk_root)
    try:
        TaskTopicAdmin(kafka=settings.kafka).create_for(specs["api"])
        assert_task_topics_as_planned(kafka_admin, specs["api"], settings.kafka)
        for role in ("mapper", "reducer"):
            spec = specs[role]
            registry.create(spec)
            procs.start(role)
            wait_for(
                lambda spec=spec: _exist(kafka_admin, spec, settings),
                timeout_s=60,
                what=f"the {role} to create the topics of task {spec.id}",
                logs=procs.logs,
            )
            procs.stop_all()
            registry.delete(spec.id)
            assert_task_topics_as_planned(kafka_admin, spec, settings.kafka)
    finally:
        procs.stop_all()
        for spec in specs.values():
            delete_task_topics(kafka_admin, spec, settings.kafka)
        kafka_admin.delete_topics([source])


@pytest.mark.timeout(60)
def test_ensure_creates_only_the_missing_topics_and_describes_no_other(
    kafka_admin: AdminClient, unique_name: str
) -> None:
    there, missing = f"{unique_name}_there", f"{unique_name}_missing"
    kafka_admin.create_topics([NewTopic(there, num_partitions=1)])[there].result(timeout=30)
    try:  # (a topic just created takes a moment to reach the broker's metadata)
        wait_for(lambda: bool(existing_topics(kafka_admin, [there])), timeout_s=30, what=there)
        assert existing_topics(kafka_admin, [there, missing, there]) == {there}
        assert existing_topics(kafka_admin, []) == set()
        plans = [TopicPlan(name=name, partitions=1) for name in (there, missing)]
        assert ensure_topics(kafka_admin, plans, Replication()) == [missing]
        wait_for(lambda: bool(existing_topics(kafka_admin, [missing])), timeout_s=30, what=missing)
        assert existing_topics(kafka_admin, [there, missing]) == {there, missing}
        assert ensure_topics(kafka_admin, plans, Replication()) == []
    finally:
        kafka_admin.delete_topics([there, missing])


def _exist(admin: AdminClient, spec: TaskSpec, settings: Settings) -> bool:
    names = {plan.name for plan in task_topic_plans(spec, settings.kafka)}
    if not names <= set(admin.list_topics(timeout=10).topics):
        return False
    return len(topic_settings(admin, sorted(names))) == len(names)

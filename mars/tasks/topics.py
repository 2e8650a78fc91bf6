"""A task's Kafka topics: names, partitions and configuration, and one idempotent `ensure`.

Whichever role needs a task's topics first creates them: the API when the task is registered,
a mapper when it starts mapping the task, a reducer when it starts owning one of its units, a
Spark backfill before it writes. All of them call `ensure_task_topics`, so a topic's settings
never depend on who came first.

- output (`mars.results.<task>`): compacted, because results are keyed by (window, group): a
  consumer that reads it from the beginning gets the final record of every window and group;
- late (`mars.late.<task>`) and dead-letter (`mars.dlq.<task>`): kept by retention;
- updates (`mars.updates.<task>`, only for EMIT CHANGES): compacted and keyed like the results,
  so the last record of each window and group is its final value.

All of them get `kafka.result_partitions` partitions, `kafka.replication_factor` replicas and
`kafka.min_insync_replicas` (`Replication.of`). The source topic is the user's and is never
created here. A task's topic names come from its spec (`TaskSpec.output_topic` and the
others); the one topic that belongs to no task, the reducers' progress topic, is planned here.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicCollection
from confluent_kafka.admin import AdminClient, NewTopic, PartitionMetadata

from mars.config import KafkaSettings
from mars.tasks.spec import TaskSpec

COMPACTED: Mapping[str, str] = {"cleanup.policy": "compact"}
PROGRESS_TOPIC = "mars.progress"  # one record per reducer commit (reducer/progress_record.py)


class TopicError(RuntimeError):
    """A topic could not be created, deleted or listed (the broker's error in the message)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicPlan:
    """One topic as it must be created."""

    name: str
    partitions: int
    config: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class Replication:
    """How many replicas a created topic gets, and how many must have a write."""

    factor: int = 1
    min_insync: int = 1

    @classmethod
    def of(cls, kafka: KafkaSettings) -> Replication:
        return cls(factor=kafka.replication_factor, min_insync=kafka.min_insync_replicas)

    def config(self) -> dict[str, str]:
        """Topic config: `min.insync.replicas` unless the broker's default (1) will do."""
        return {"min.insync.replicas": str(self.min_insync)} if self.min_insync > 1 else {}


def task_topic_plans(spec: TaskSpec, kafka: KafkaSettings) -> tuple[TopicPlan, ...]:
    """The output, late and dead-letter topics of `spec`, and its updates topic if any."""
    partitions = kafka.result_partitions
    plans = [
        TopicPlan(name=spec.output_topic, partitions=partitions, config=COMPACTED),
        TopicPlan(name=spec.late_topic, partitions=partitions),
        TopicPlan(name=spec.dead_letter_topic, partitions=partitions),
    ]
    if spec.updates_topic is not None:
        plans.append(TopicPlan(name=spec.updates_topic, partitions=partitions, config=COMPACTED))
    return tuple(plans)


def ensure_task_topics(
    admin: AdminClient, spec: TaskSpec, kafka: KafkaSettings, *, timeout_s: float = 30.0
) -> list[str]:
    """Create whichever of the task's topics do not exist yet; returns the ones created."""
    return ensure_topics(
        admin, task_topic_plans(spec, kafka), Replication.of(kafka), timeout_s=timeout_s
    )


def delete_task_topics(
    admin: AdminClient, spec: TaskSpec, kafka: KafkaSettings, *, timeout_s: float = 30.0
) -> None:
    """Delete the task's topics (missing ones are ignored)."""
    names = [plan.name for plan in task_topic_plans(spec, kafka)]
    futures = admin.delete_topics(names, request_timeout=timeout_s)
    _succeeded(futures, "delete", but=KafkaError.UNKNOWN_TOPIC_OR_PART, timeout_s=timeout_s)


def ensure_topics(
    admin: AdminClient,
    plans: Iterable[TopicPlan],
    replication: Replication,
    *,
    timeout_s: float = 30.0,
) -> list[str]:
    """Create each planned topic that does not exist yet (idempotent: a topic another process
    created meanwhile counts as there); returns the names created."""
    plans = list(plans)
    existing = existing_topics(admin, [plan.name for plan in plans], timeout_s=timeout_s)
    missing = [
        NewTopic(
            plan.name,
            num_partitions=plan.partitions,
            replication_factor=replication.factor,
            config={**replication.config(), **plan.config},
        )
        for plan in plans
        if plan.name not in existing
    ]
    if not missing:
        return []
    futures = admin.create_topics(missing, operation_timeout=timeout_s)
    return sorted(
        _succeeded(futures, "create", but=KafkaError.TOPIC_ALREADY_EXISTS, timeout_s=timeout_s)
    )


def existing_topics(
    admin: AdminClient, names: Iterable[str], *, timeout_s: float = 30.0
) -> set[str]:
    """Which of `names` exist, asked of the broker for those topics only. A full listing
    answers a record per partition of the cluster, and every process that starts a task paid
    it: 18 ms a call on a broker of 300 topics here. A metadata request that names a topic can
    auto-create it (`auto.create.topics.enable`); a describe never does."""
    wanted = list(dict.fromkeys(names))
    if not wanted:
        return set()
    try:
        described = admin.describe_topics(TopicCollection(wanted), request_timeout=timeout_s)
    except KafkaException as exc:
        raise TopicError(f"cannot describe topics {wanted}: {exc}") from exc
    return _succeeded(
        described, "describe", but=KafkaError.UNKNOWN_TOPIC_OR_PART, timeout_s=timeout_s
    )


def _succeeded(
    futures: Mapping[str, Future[Any]], doing: str, *, but: int, timeout_s: float
) -> set[str]:
    """The topics whose admin operation succeeded; one failing with error code `but` is left
    out, any other failure raises `TopicError`."""
    done = set()
    for name, future in futures.items():
        try:
            future.result(timeout=timeout_s)
        except KafkaException as exc:
            if exc.args[0].code() != but:
                raise TopicError(f"cannot {doing} topic {name}: {exc}") from exc
            continue
        done.add(name)
    return done


MetadataClient = AdminClient | Producer | Consumer


def topic_partitions(
    client: MetadataClient, topic: str, *, timeout_s: float = 30.0
) -> dict[int, PartitionMetadata]:
    """The topic's partitions (id -> metadata) once the metadata (from any Kafka client) shows
    them: a topic just created may be listed with none for a moment (on several brokers it
    often is). Raises `TopicError` when it never does."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            described = client.list_topics(topic, timeout=timeout_s).topics.get(topic)
        except KafkaException as exc:
            raise TopicError(f"cannot describe topic {topic}: {exc}") from exc
        if described is not None and described.error is None and described.partitions:
            return dict(described.partitions)
        if time.monotonic() >= deadline:
            reason = "not in the metadata" if described is None else described.error
            raise TopicError(f"topic {topic} has no partitions after {timeout_s:.0f} s: {reason}")
        time.sleep(0.2)


def partition_count(client: MetadataClient, topic: str, *, timeout_s: float = 30.0) -> int:
    """The topic's partition count, waiting as `topic_partitions` does."""
    return len(topic_partitions(client, topic, timeout_s=timeout_s))


# Compaction keeps the latest progress per unit; small segments let the cleaner run early, so a
# new owner's scan of one partition stays short.
PROGRESS_TOPIC_PLAN = TopicPlan(
    name=PROGRESS_TOPIC,
    partitions=8,
    config={
        "cleanup.policy": "compact",
        "segment.ms": "600000",
        "min.cleanable.dirty.ratio": "0.1",
    },
)

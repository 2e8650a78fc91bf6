"""Mapper behaviour on small dedicated topics: batch-size independence, dead letters,
backpressure, following task changes. Real services and `mars mapper` subprocesses."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, Message, Producer
from confluent_kafka.admin import AdminClient
from kazoo.client import KazooClient

from devtools.gen import GeneratorConfig, generate
from devtools.gen.partitioning import PartitionStrategy
from devtools.gen.produce import produce
from devtools.local import ClusterState
from mars.engine.dataset import OpenWindows, decode_dataset, merge_into
from mars.registry import TaskStatus
from mars.side_topics import REASON_HEADER, SOURCE_HEADER
from mars.store import SeqStore
from tests.integration.mapper.conftest import MapperGroupFactory
from tests.integration.mapper.mapper_harness import (
    PAPER_ORACLE,
    all_applied,
    committed_offsets,
    create_topic,
    merge_all,
    register_task,
    results_of,
    wait_until,
)
from tests.oracle import expected_results

pytestmark = pytest.mark.integration

SMALL_WINDOW_SQL = (
    "SELECT sip, type, count(*) AS cnt, sum(bytes) AS total FROM {topic} "
    "GROUP BY sip, type WINDOWING 10 s"
)


def _produce(
    cluster: ClusterState,
    admin: AdminClient,
    topic: str,
    config: GeneratorConfig,
    *,
    partitions: int,
) -> dict[int, int]:
    create_topic(admin, topic, partitions=partitions)
    report = produce(cluster.kafka(), topic, config, strategy=PartitionStrategy.ROUND_ROBIN)
    return dict(report.per_partition)


def test_batch_size_does_not_change_totals_or_late_counts(
    cluster: ClusterState,
    kafka_admin: AdminClient,
    mapper_group: MapperGroupFactory,
    zk_client: KazooClient,
    store: SeqStore,
    unique_name: str,
) -> None:
    topic = f"{unique_name}_disorder"
    config = GeneratorConfig(count=2500, seed=3, span_s=600, disorder_s=40, sip_cardinality=50)
    ends = _produce(cluster, kafka_admin, topic, config, partitions=2)
    runs = {}
    for batch_size in (1, 7, 5000):
        group = mapper_group(MARS_MAPPER__BATCH_SIZE=str(batch_size))
        spec = register_task(
            group.registry(zk_client), task_id=group.name, topic=topic, sql=SMALL_WINDOW_SQL
        )
        group.start()
        runs[batch_size] = (group, spec)
    for group, spec in runs.values():
        wait_until(
            lambda spec=spec: all_applied(store, spec.id, ends),  # type: ignore[misc]
            timeout_s=120,
            what=f"task {spec.id} applied",
            logs=group.logs,
        )

    totals = {size: results_of(spec, merge_all(store, spec)) for size, (_g, spec) in runs.items()}
    stats = {size: store.counters.read(spec.id) for size, (_g, spec) in runs.items()}
    assert stats[5000]["late"] > 0, "the input should have late records"
    assert stats[1]["batches"] > stats[7]["batches"] > stats[5000]["batches"]
    for size in (1, 7):
        assert totals[size] == totals[5000]
        for counter in ("records_in", "accepted", "late", "bad"):
            assert stats[size].get(counter, 0) == stats[5000].get(counter, 0), counter
    assert stats[1]["records_in"] == 2500


def _read_topic(bootstrap: str, topic: str, expected: int) -> list[Message]:
    """Every record of `topic` (waits for `expected`, then a little longer for extras)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"reader-{topic}",
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([topic])
    messages: list[Message] = []
    deadline = time.monotonic() + 30
    try:
        while len(messages) < expected and time.monotonic() < deadline:
            batch = consumer.consume(num_messages=1000, timeout=0.5)
            messages += [m for m in batch if m.error() is None]
        batch = consumer.consume(num_messages=1000, timeout=1.0)
        messages += [m for m in batch if m.error() is None]
    finally:
        consumer.close()
    return messages


def test_malformed_records_go_to_the_dead_letter_topic(
    cluster: ClusterState,
    kafka_admin: AdminClient,
    mapper_group: MapperGroupFactory,
    zk_client: KazooClient,
    store: SeqStore,
    unique_name: str,
) -> None:
    topic = f"{unique_name}_malformed"
    config = GeneratorConfig(count=20_000, seed=9, malformed_ratio=0.01, span_s=900)
    ends = _produce(cluster, kafka_admin, topic, config, partitions=2)
    batch = generate(config)
    group = mapper_group()
    spec = register_task(group.registry(zk_client), task_id=group.name, topic=topic)
    group.start()
    wait_until(
        lambda: all_applied(store, spec.id, ends), timeout_s=90, what="applied", logs=group.logs
    )

    malformed = len(batch.malformed)
    assert 150 < malformed < 250
    stats = store.counters.read(spec.id)
    assert stats["records_in"] == 20_000
    assert stats["bad"] == malformed
    assert stats.get("late", 0) == 0
    expected = expected_results(batch.values, **PAPER_ORACLE)
    assert results_of(spec, merge_all(store, spec)) == expected.results

    dead = _read_topic(cluster.kafka_bootstrap, spec.dead_letter_topic, malformed)
    assert sorted(m.value() or b"" for m in dead) == sorted(
        batch.values[i] for i in batch.malformed
    )
    for message in dead:
        headers = dict(message.headers() or [])
        assert headers[REASON_HEADER]
        source = headers[SOURCE_HEADER]
        assert isinstance(source, bytes)
        assert message.key() == source
        src_topic, partition, offset = source.decode().split("/")
        assert src_topic == topic and int(offset) < ends[int(partition)]

    # Idle partitions are reported caught up, so reducers can close the last windows.
    def all_caught_up() -> bool:
        snapshot = store.snapshot(spec.id, 0)
        return snapshot.partition_count == 2 and all(
            snapshot.live.get(p) is not None and snapshot.live[p].caught_up for p in (0, 1)
        )

    wait_until(all_caught_up, timeout_s=20, what="caught-up heartbeats", logs=group.logs)


def test_backpressure_pauses_below_the_mark_and_drains_exactly(
    cluster: ClusterState,
    kafka_admin: AdminClient,
    mapper_group: MapperGroupFactory,
    zk_client: KazooClient,
    store: SeqStore,
    unique_name: str,
) -> None:
    topic = f"{unique_name}_pressure"
    config = GeneratorConfig(count=30_000, seed=4, span_s=900)
    ends = _produce(cluster, kafka_admin, topic, config, partitions=4)
    high = 48
    group = mapper_group(
        MARS_MAPPER__BATCH_SIZE="400", MARS_MAPPER__BACKLOG_HIGH_DATASETS=str(high)
    )
    spec = register_task(group.registry(zk_client), task_id=group.name, topic=topic, buckets=4)
    group.start()

    # No reducer: the backlog levels off below the mark, the group's lag stays.
    wait_until(
        lambda: store.backlog(spec.id, buckets=4).unmerged >= high // 2,
        timeout_s=60,
        what="a backlog",
        logs=group.logs,
    )
    peak = 0
    for _ in range(20):
        peak = max(peak, store.backlog(spec.id, buckets=4).unmerged)
        time.sleep(0.2)
    mapped = store.counters.read(spec.id)["records_in"]
    assert peak <= high
    assert mapped < 30_000
    time.sleep(1.0)
    assert store.counters.read(spec.id)["records_in"] == mapped, (
        "paused partitions must not be read"
    )
    committed = committed_offsets(cluster.kafka_bootstrap, group.group_id, topic, 4)
    lag = sum(ends[p] - max(committed.get(p, 0), 0) for p in ends)
    assert lag >= 30_000 - mapped > 0

    # Act as the reducer: merge what is there, release it; the mappers resume and drain.
    merged: OpenWindows = {}
    deadline = time.monotonic() + 120
    while not all_applied(store, spec.id, ends) and time.monotonic() < deadline:
        for bucket in range(4):
            snapshot = store.snapshot(spec.id, bucket)
            if snapshot.seq >= snapshot.rseq:
                for _seq, data in store.read_datasets(spec.id, bucket, snapshot.rseq, snapshot.seq):
                    merge_into(merged, decode_dataset(data))
                store.release(spec.id, bucket, snapshot.seq + 1)
        time.sleep(0.1)
    assert all_applied(store, spec.id, ends), group.logs()
    merge_all(store, spec, into=merged)

    expected = expected_results(generate(config).values, **PAPER_ORACLE)
    assert results_of(spec, merged) == expected.results
    wait_until(
        lambda: store.counters.read(spec.id).get("paused_ms", 0) > 0,
        timeout_s=10,
        what="paused time in the stats",
        logs=group.logs,
    )


def test_task_changes_are_followed_without_restart(
    cluster: ClusterState,
    kafka_admin: AdminClient,
    mapper_group: MapperGroupFactory,
    zk_client: KazooClient,
    store: SeqStore,
    unique_name: str,
) -> None:
    topic = f"{unique_name}_follow"
    first = GeneratorConfig(count=3000, seed=1, span_s=600)
    ends = _produce(cluster, kafka_admin, topic, first, partitions=2)
    group = mapper_group()
    registry = group.registry(zk_client)
    early = register_task(registry, task_id=f"{group.name}a", topic=topic)
    group.start()
    wait_until(lambda: all_applied(store, early.id, ends), timeout_s=60, what="a", logs=group.logs)

    # A task registered later on the same topic is mapped from the start of the topic.
    late_comer = register_task(registry, task_id=f"{group.name}b", topic=topic)
    wait_until(
        lambda: all_applied(store, late_comer.id, ends), timeout_s=30, what="b", logs=group.logs
    )
    assert store.counters.read(late_comer.id)["records_in"] == 3000
    assert store.counters.read(early.id)["records_in"] == 3000  # not re-applied by the seek back

    # A paused task stops being mapped; a task on a topic created later is picked up.
    registry.set_status(early.id, TaskStatus.PAUSED)
    other_topic = f"{unique_name}_later"
    third = register_task(registry, task_id=f"{group.name}c", topic=other_topic)
    time.sleep(2.0)
    more = GeneratorConfig(count=1000, seed=2, span_s=600, start_s=first.start_s + 600)
    report = produce(cluster.kafka(), topic, more, strategy=PartitionStrategy.ROUND_ROBIN)
    ends_after = {p: ends[p] + report.per_partition.get(p, 0) for p in ends}
    other_ends = _produce(cluster, kafka_admin, other_topic, first, partitions=1)
    wait_until(
        lambda: (
            all_applied(store, late_comer.id, ends_after)
            and all_applied(store, third.id, other_ends)
        ),
        timeout_s=60,
        what="b and c",
        logs=group.logs,
    )
    assert store.counters.read(early.id)["records_in"] == 3000
    assert store.counters.read(late_comer.id)["records_in"] == 4000
    assert store.counters.read(third.id)["records_in"] == 3000


NOT_A_NUMBER = '"n/a"'


def test_tasks_over_one_topic_share_a_decode_but_not_their_bad_records(
    cluster: ClusterState,
    kafka_admin: AdminClient,
    mapper_group: MapperGroupFactory,
    zk_client: KazooClient,
    store: SeqStore,
    unique_name: str,
) -> None:
    """Each batch is decoded once for both tasks (mars.engine.shared_decode); a record whose
    `bytes` is text is bad for the task that sums it and counted by the one that does not."""
    topic = f"{unique_name}_shared"
    create_topic(kafka_admin, topic, partitions=2)
    values = [
        (
            f'{{"timestamp": {1_700_000_000 + i // 20}, "sip": "10.0.0.{i % 7}", '
            f'"type": {i % 3}, "bytes": {NOT_A_NUMBER if i % 50 == 0 else i % 997}}}'
        ).encode()
        for i in range(6000)
    ]
    producer = Producer({"bootstrap.servers": cluster.kafka_bootstrap})
    for i, value in enumerate(values):
        producer.produce(topic, value=value, partition=i % 2)
    producer.flush(30)
    ends = {0: 3000, 1: 3000}
    group = mapper_group()
    registry = group.registry(zk_client)
    summing = register_task(
        registry,
        task_id=f"{group.name}sum",
        topic=topic,
        sql="SELECT sip, count(*) AS cnt, sum(bytes) AS total FROM {topic} "
        "GROUP BY sip WINDOWING 60 s",
    )
    counting = register_task(
        registry,
        task_id=f"{group.name}count",
        topic=topic,
        sql="SELECT type, count(*) AS cnt FROM {topic} GROUP BY type WINDOWING 60 s",
    )
    group.start()
    for spec in (summing, counting):
        wait_until(
            lambda spec=spec: all_applied(store, spec.id, ends),  # type: ignore[misc]
            timeout_s=60,
            what=spec.id,
            logs=group.logs,
        )

    not_numbers = [value for value in values if NOT_A_NUMBER.encode() in value]
    assert len(not_numbers) == 120
    assert store.counters.read(summing.id)["bad"] == 120
    assert store.counters.read(counting.id).get("bad", 0) == 0
    numbers = [value for value in values if NOT_A_NUMBER.encode() not in value]
    expected_sums = expected_results(
        numbers,
        group_by=["sip"],
        window_ms=60_000,
        aggregates={"cnt": "count(*)", "total": "sum(bytes)"},
    )
    assert results_of(summing, merge_all(store, summing)) == expected_sums.results
    expected_counts = expected_results(
        values, group_by=["type"], window_ms=60_000, aggregates={"cnt": "count(*)"}
    )
    assert results_of(counting, merge_all(store, counting)) == expected_counts.results

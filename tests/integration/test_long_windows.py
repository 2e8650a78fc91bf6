"""Long windows under sustained traffic with backpressure engaged: bounded state, no stall.

Two tasks on one topic, run by 2 `mars mapper` + 2 `mars reducer` processes: the reference
query's count per (sip, type) over 10-minute tumbling windows with grace, and a count and sum
per type over hopping windows of 10 minutes sliding by 5. The stream spans 40 minutes of event
time (several windows of each) produced at a bounded rate, in slightly disordered time. The
mappers' backlog mark is set very low; the reducers start only once the mappers have paused, and
later both freeze for a few seconds, so the mappers pause and resume under load.

- every window of each task is emitted exactly once, equal to the DuckDB oracle;
- nothing stalls: paused partitions never hold back the windows whose closing they wait for
  (the backlog counts only unmerged data sets; reducers checkpoint and release the rest);
- Redis never holds more than a fraction of one window's data sets: state does not grow with
  the window length (before checkpoints it held every data set of every open window).
"""

from __future__ import annotations

import json
import time

import pytest
import redis
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
from kazoo.client import KazooClient

from devtools.gen import GeneratorConfig, generate
from devtools.local import ClusterState, LocalCluster
from mars.clients.kafka_config import IDEMPOTENT_PRODUCER
from mars.registry import TaskRegistry
from mars.sql import parse_task
from mars.store import SeqStore
from tests.integration.pipeline import (
    BackgroundProducer,
    OracleInBackground,
    PipelineProcesses,
    TopicReader,
    check_exact,
    create_task_topics,
    delete_task_topics,
    wait_for,
)

pytestmark = [pytest.mark.integration, pytest.mark.exclusive]

RECORDS = 100_000
PRODUCE_S = 40.0
PARTITIONS = 4
CONFIG = GeneratorConfig(
    count=RECORDS, seed=11, span_s=2_400, disorder_s=3, sip_cardinality=50, malformed_ratio=0.002
)
TUMBLING = (
    "SELECT sip, type, timestamp, count(*) FROM {topic} "
    "GROUP BY sip, type, timestamp WINDOWING 10 m GRACE 5 s"
)
HOPPING = (
    "SELECT type, COUNT(*) AS n, SUM(bytes) AS total FROM {topic} "
    "GROUP BY type WINDOWING 10 m SLIDE 5 m GRACE 5 s"
)
BACKLOG_HIGH = 200
PROCESS_ENV = {
    "MARS_MAPPER__BACKLOG_HIGH_DATASETS": str(BACKLOG_HIGH),
    "MARS_REDUCER__CHECKPOINT_INTERVAL_MS": "1000",
}
FREEZE_S = 4.0  # both reducers stopped, well below their ZooKeeper session timeout
# After the stream, one record per partition two hours later closes every window of the stream
# by event time (its own window stays open), as a user's next data would.
PUSHER_DELAY_S = 7_200


@pytest.mark.timeout(600)
def test_ten_minute_windows_under_backpressure_are_exact_and_never_stall(
    local_cluster: LocalCluster,
    cluster: ClusterState,
    kafka_admin: AdminClient,
    zk_client: KazooClient,
    zk_root: str,
    redis_client: redis.Redis,
    unique_name: str,
) -> None:
    topic = f"{unique_name}_src"
    options = {"idle_timeout": "30 s", "buckets": 8}
    tumbling = parse_task(TUMBLING.format(topic=topic), task_id=f"{unique_name}a", options=options)
    hopping = parse_task(HOPPING.format(topic=topic), task_id=f"{unique_name}b", options=options)
    create_task_topics(kafka_admin, tumbling, source_partitions=PARTITIONS)
    create_task_topics(kafka_admin, hopping, source_partitions=None)
    registry = TaskRegistry(zk_client, root=zk_root)
    for spec in (tumbling, hopping):
        registry.create(spec)
    store = SeqStore(redis_client)
    tumbling_oracle = OracleInBackground(
        CONFIG, group_by=["sip", "type"], window_ms=600_000, aggregates={"count_star": "count(*)"}
    )
    hopping_oracle = OracleInBackground(
        CONFIG,
        group_by=["type"],
        window_ms=600_000,
        slide_ms=300_000,
        aggregates={"n": "count(*)", "total": "sum(bytes)"},
    )
    procs = PipelineProcesses(
        cluster=local_cluster,
        name=unique_name,
        env={
            **PROCESS_ENV,
            "MARS_ZOOKEEPER__ROOT": zk_root,
            "MARS_MAPPER__GROUP_ID": f"mappers-{unique_name}",
        },
    )
    reader = TopicReader(
        cluster.kafka_bootstrap,
        [tumbling.output_topic, hopping.output_topic, tumbling.late_topic, hopping.late_topic],
    )
    try:
        procs.start_many(["mapper", "mapper"])
        producer = BackgroundProducer(
            bootstrap=cluster.kafka_bootstrap, topic=topic, config=CONFIG, rate=RECORDS / PRODUCE_S
        )
        producer.start()
        peak_unreleased = 0

        def sample() -> None:
            nonlocal peak_unreleased
            backlogs = [store.backlog(s.id, buckets=8) for s in (tumbling, hopping)]
            peak_unreleased = max(peak_unreleased, *(b.unreleased for b in backlogs))
            reader.poll_for(0.25)

        # No reducer yet: the mappers fill the backlog up to the mark and pause.
        wait_for(
            lambda: store.backlog(tumbling.id, buckets=8).unmerged >= BACKLOG_HIGH // 2,
            timeout_s=60,
            what="the mappers' backlog to reach half the mark",
            logs=procs.logs,
        )
        time.sleep(2.0)
        reducers = procs.start_many(["reducer", "reducer"])
        wait_for(
            lambda: producer.produced >= RECORDS // 2,
            timeout_s=120,
            what="half the input produced",
            every=sample,
        )
        for name in reducers:
            procs.pause(name)
        time.sleep(FREEZE_S)
        for name in reducers:
            procs.resume(name)
        while not producer.done():
            sample()
        assert producer.join(timeout_s=60).produced == RECORDS
        push_every_partition(cluster.kafka_bootstrap, topic)

        tumbling_expected, malformed = tumbling_oracle.result(timeout_s=300)
        hopping_expected, _ = hopping_oracle.result(timeout_s=300)
        for spec, expected in ((tumbling, tumbling_expected), (hopping, hopping_expected)):
            wait_for(
                lambda spec=spec, expected=expected: (
                    len(reader.values(spec.output_topic)) >= len(expected)
                ),
                timeout_s=240,
                what=f"every window of task {spec.id}",
                logs=procs.logs,
                every=lambda: reader.poll_for(1.0),
            )
        reader.poll_for(3.0)  # a duplicate would show up now

        check_exact(
            reader.values(tumbling.output_topic),
            tumbling_expected,
            ("sip", "type"),
            ("count_star",),
        )
        check_exact(
            reader.values(hopping.output_topic), hopping_expected, ("type",), ("n", "total")
        )
        for spec in (tumbling, hopping):
            stats = store.counters.read(spec.id)
            assert stats["records_in"] == RECORDS + PARTITIONS
            assert stats.get("bad", 0) == malformed
            assert stats.get("late", 0) == stats.get("late_reducer", 0) == 0
            assert not reader.records[spec.late_topic]
        paused_ms = store.counters.read(tumbling.id).get("paused_ms", 0)
        assert paused_ms > 0, "backpressure never engaged: the test shows nothing"
        # One 10-minute window of event time is a quarter of the stream's data sets.
        window_datasets = store.counters.read(tumbling.id)["datasets"] / 4
        assert peak_unreleased < window_datasets / 2, (peak_unreleased, window_datasets)
        print(
            f"\nlong windows: {RECORDS:,} records, mappers paused {paused_ms / 1000:.1f} s, "
            f"peak data sets in Redis {peak_unreleased} (a window has {window_datasets:.0f})"
        )
    finally:
        procs.stop_all()
        reader.close()
        tumbling_oracle.close()
        hopping_oracle.close()
        for spec in (tumbling, hopping):
            store.delete_task(spec.id)
            delete_task_topics(kafka_admin, spec)


def push_every_partition(bootstrap: str, topic: str) -> None:
    """One record per partition far past the stream: every window of the stream closes."""
    record = json.loads(generate(GeneratorConfig(count=1, seed=1)).values[0])
    record["timestamp"] = CONFIG.start_s + CONFIG.span_s + PUSHER_DELAY_S
    producer = Producer({"bootstrap.servers": bootstrap, **IDEMPOTENT_PRODUCER})
    for partition in range(PARTITIONS):
        producer.produce(topic, json.dumps(record).encode(), partition=partition)
    assert producer.flush(30) == 0

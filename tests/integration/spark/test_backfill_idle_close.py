"""A task whose whole history a Spark backfill applied, and no live record after: idle close
still emits every window (README's "Backfill history with Spark" on a running cluster).

Two mappers and two reducers run; the task is registered PAUSED; the backfill (local[2]; the
pipeline test runs it on the standalone cluster) applies the history; the task is resumed and
nothing more is produced. No mapper batch ever moves the partitions' sources, so
idle close counts from when the mappers confirmed them caught up (mars.store.watermark). Every
window must come out within `idle_timeout` plus the last window's own wait (its end + grace
past the newest event time, in wall-clock time) plus a margin, exact against DuckDB, none
twice; in the second case a reducer is SIGKILLed right after the resume, and the allowance
adds its failover (session expiry, then the replacement's start and restore).
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
import redis
from confluent_kafka.admin import AdminClient
from kazoo.client import KazooClient

from devtools.gen import generate
from devtools.gen.partitioning import PartitionStrategy
from devtools.gen.produce import produce
from devtools.local import ClusterState, LocalCluster
from mars.config import Settings
from mars.registry import TaskRegistry, TaskStatus
from mars.sql import parse_task
from mars.store import SeqStore
from mars.store.backfill import BackfillCoordination
from tests.integration.pipeline import (
    PipelineProcesses,
    ReducerCluster,
    TopicReader,
    check_exact,
    create_task_topics,
    delete_task_topics,
    wait_for,
)
from tests.integration.spark.helpers import StreamsOracle, history_and_live
from tests.integration.spark.test_backfill_pipeline import PROCESS_ENV, BackfillThread

pytestmark = [pytest.mark.integration, pytest.mark.exclusive]

HISTORY = 40_000
PARTITIONS = 4
IDLE_TIMEOUT_S = 3
WINDOW_S, GRACE_S = 10, 5  # the history's disorder is at most 5 s: nothing is late
SQL = (
    "SELECT sip, type, count(*) AS cnt, sum(bytes) AS total FROM {topic} "
    f"GROUP BY sip, type WINDOWING {WINDOW_S} s GRACE {GRACE_S} s"
)
ORACLE = {
    "group_by": ["sip", "type"],
    "window_ms": WINDOW_S * 1000,
    "aggregates": {"cnt": "count(*)", "total": "sum(bytes)"},
}
MARGIN_S = 20  # heartbeats, the reducers' polls and a loaded 2-core machine
# The killed reducer's units move once its ZooKeeper session expires; its replacement then
# starts, restores and fences the old transactions before it can close anything.
FAILOVER_S = int(PROCESS_ENV["MARS_ZOOKEEPER__SESSION_TIMEOUT_S"]) + 10


@pytest.mark.timeout(600)
@pytest.mark.parametrize("mode", ["local", "reducer-killed"])
def test_a_backfilled_task_emits_every_window_by_idle_close_without_live_records(
    mode: str,
    spark: Any,
    settings: Settings,
    local_cluster: LocalCluster,
    cluster: ClusterState,
    kafka_admin: AdminClient,
    zk_client: KazooClient,
    zk_root: str,
    redis_client: redis.Redis,
    unique_name: str,
) -> None:
    spec = parse_task(
        SQL.format(topic=f"{unique_name}_src"),
        task_id=unique_name,
        options={"idle_timeout": f"{IDLE_TIMEOUT_S} s", "buckets": 4},
    )
    create_task_topics(kafka_admin, spec, source_partitions=PARTITIONS)
    history_stream, _ = history_and_live(history=HISTORY, live=0, seeds=(21, 22))
    oracle = StreamsOracle([history_stream], **ORACLE)
    newest_s = max(int(r["timestamp"]) for r in map(_record, generate(history_stream).values))
    last_close_s = newest_s - newest_s % WINDOW_S + WINDOW_S + GRACE_S
    procs = PipelineProcesses(
        cluster=local_cluster,
        name=unique_name,
        env={
            **PROCESS_ENV,
            "MARS_ZOOKEEPER__ROOT": zk_root,
            "MARS_MAPPER__GROUP_ID": f"mappers-{unique_name}",
        },
    )
    reader = TopicReader(cluster.kafka_bootstrap, [spec.output_topic, spec.late_topic])
    store = SeqStore(redis_client)
    try:
        produce(
            settings.kafka,
            spec.source_topic,
            history_stream,
            strategy=PartitionStrategy.ROUND_ROBIN,
        )
        procs.start_many(["reducer", "reducer", "mapper", "mapper"])
        registry = TaskRegistry(zk_client, root=zk_root)
        registry.create(spec, status=TaskStatus.PAUSED)
        BackfillThread(spark, settings, spec).join()
        assert BackfillCoordination(redis_client).holds(spec.id) == {}

        registry.set_status(spec.id, TaskStatus.RUNNING)
        resumed = time.monotonic()
        units = {f"{spec.id}/{bucket}" for bucket in range(spec.options.buckets)}
        wait_for(
            lambda: ReducerCluster.read(zk_client, root=zk_root).settled(members=2, units=units),
            timeout_s=60,
            what="2 reducers owning every unit",
            logs=procs.logs,
        )
        allowed_s = IDLE_TIMEOUT_S + (last_close_s - newest_s) + MARGIN_S
        if mode == "reducer-killed":
            procs.kill(procs.alive("reducer")[0])
            procs.start("reducer")
            allowed_s += FAILOVER_S
        expected = oracle.result(timeout_s=300)
        wait_for(
            lambda: len(reader.values(spec.output_topic)) >= len(expected),
            timeout_s=allowed_s + 60,
            what="every window of the history",
            logs=procs.logs,
            every=lambda: reader.poll_for(0.5),
        )
        took_s = time.monotonic() - resumed
        reader.poll_for(3.0)  # a duplicate would show up now
        check_exact(reader.values(spec.output_topic), expected, ("sip", "type"), ("cnt", "total"))
        assert not reader.records[spec.late_topic]
        print(
            f"\nbackfill idle close ({mode}): every window {took_s:.1f} s after the resume "
            f"(allowed {allowed_s} s)"
        )
        assert took_s <= allowed_s, f"took {took_s:.1f} s, allowed {allowed_s} s"
    finally:
        procs.stop_all()
        reader.close()
        oracle.close()
        store.delete_task(spec.id)
        delete_task_topics(kafka_admin, spec)


def _record(value: bytes) -> dict[str, Any]:
    parsed: dict[str, Any] = json.loads(value)
    return parsed

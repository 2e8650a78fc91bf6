"""Redis Cluster loses a master mid-run: exactly-once beyond one machine (docs/deployment.md).

The module starts a cluster of its own as `mars local up --redis-cluster` does: three Redis
Cluster masters (`redis-1..3`, the 16,384 slots split between them, AOF on), beside a Kafka
and a ZooKeeper; every Mars process gets `redis.url = redis+cluster://...` naming all three.
Each task's keys share the hash tag `{task}`, so each Lua script runs on the one master that
serves the task's slot.

The reference query (docs/references.md), with 10 s windows, runs over 350,000 live records (two
partitions, two mappers, two reducers). 15 s of traffic in, the master serving the task's slot is
killed with SIGKILL and started again a few seconds later from its AOF: while it is down every
script of the task fails, mappers and reducers retry (the stream slows to a fifth of its rate until
the master answers again, so traffic still flows when it is back). Every (window, sip, type) must
then come exactly once with the DuckDB oracle's count."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from redis.cluster import RedisCluster

from devtools.local import LocalCluster
from mars.clients import admin_client, connect_redis
from mars.config import RedisSettings, load_settings
from mars.store import Backlog, Heartbeat, SeqStore, TaskKeys
from tests.integration.pipeline import ExpectedTopic, wait_exact
from tests.integration.watched import (
    PAPER_AGGREGATES,
    PAPER_GROUPS,
    PaperStream,
    WatchedPipeline,
    make_topic,
    windowed_sql,
)

MASTERS = 3
RATE = 10_000
PRODUCE_S = 35  # 350,000 records
KILL_AFTER_S = 15  # of produced traffic
DOWN_S = 3
PARTITIONS = 2
SEED = 31

pytestmark = [
    pytest.mark.integration,
    pytest.mark.exclusive,
    pytest.mark.own_cluster(redis_cluster_masters=MASTERS),
]


@pytest.mark.timeout(300)
def test_a_master_killed_mid_stream_loses_and_doubles_nothing(
    own_cluster: LocalCluster, unique_name: str
) -> None:
    state = own_cluster.state
    assert state is not None
    assert state.redis_url.startswith("redis+cluster://")
    status = own_cluster.status()
    redis_nodes = [p for p in status["processes"] if p["role"] == "redis"]
    assert len(redis_nodes) == MASTERS and all(p["healthy"] for p in redis_nodes)
    admin = admin_client(state.kafka())
    topic = make_topic(admin, f"{unique_name}_src", partitions=PARTITIONS)
    sql = windowed_sql(topic, PAPER_GROUPS, PAPER_AGGREGATES, "10 s")
    with WatchedPipeline.running(
        own_cluster,
        name=unique_name,
        token=load_settings().api.token,
        env={},
        mappers=2,
        reducers=2,
    ) as pipeline:
        output = pipeline.register(sql, task_id=unique_name, options={})["topics"]["output"]
        victim = _master_of(state.redis_url, own_cluster, unique_name)
        with PaperStream.running(
            state.kafka_bootstrap,
            topic,
            rate=RATE,
            seconds=PRODUCE_S,
            partitions=PARTITIONS,
            seed=SEED,
        ) as stream:
            stream.wait_produced(KILL_AFTER_S)
            killed_at = time.monotonic()
            with stream.producer.slowed():  # a slow restart leaves traffic for the rejoin
                own_cluster.restart("redis", name=victim, kill=True, down_s=DOWN_S)
            print(
                f"killed {victim} (the task's master), back in {time.monotonic() - killed_at:.1f} s"
            )
            assert not stream.producer.done(), "the stream ended while the master was down"
            expected = stream.finish()
        counted = sum(row["count_star"] for row in expected.values())
        assert counted >= RATE * PRODUCE_S, counted  # the windows hold every valid record produced
        expectation = ExpectedTopic(output, expected, PAPER_GROUPS, tuple(PAPER_AGGREGATES))
        wait_exact(state.kafka_bootstrap, [expectation], logs=pipeline.logs, timeout_s=180)
        mapper_logs = [
            Path(handle.log).read_text(errors="replace")
            for name, handle in pipeline.procs.handles.items()
            if "-mapper-" in name
        ]
        # The kill was felt: the mappers' writes to the task's master failed, then went on.
        assert any("write failed" in log for log in mapper_logs)


@pytest.mark.timeout(60)
def test_every_tasks_heartbeat_backlog_and_rewinds_in_one_call_across_masters(
    own_cluster: LocalCluster, unique_name: str
) -> None:
    """A mapper's heartbeats, backlog checks and rewind polls of all its tasks go out in one
    call each, which the cluster client splits by master: tasks on every master all land."""
    state = own_cluster.state
    assert state is not None
    client = connect_redis(RedisSettings(url=state.redis_url))
    assert isinstance(client, RedisCluster)
    store = SeqStore(client)
    tasks: list[str] = []
    masters: set[int] = set()
    while len(masters) < MASTERS or len(tasks) < 6:  # tasks on every master
        tasks.append(f"{unique_name}-{len(tasks)}")
        masters.add(client.get_node_from_key(TaskKeys(tasks[-1]).live).port)
    try:
        caught_up = {t: {0: True, 1: i % 2 == 0} for i, t in enumerate(tasks)}
        store.heartbeats(
            {t: Heartbeat(partition_count=2, partitions=caught_up[t]) for t in tasks},
            now_ms=5_000,
        )
        for task in tasks:
            snapshot = store.snapshot(task, 0)
            assert snapshot.partition_count == 2
            assert {p: s.caught_up for p, s in snapshot.live.items()} == caught_up[task]
        for i, task in enumerate(tasks):
            client.set(TaskKeys(task).seq(1), i)
        backlogs = store.backlogs(dict.fromkeys(tasks, 2))
        assert backlogs == {t: Backlog(unmerged=i, unreleased=i) for i, t in enumerate(tasks)}
        assert all(store.backlog(t, buckets=2) == backlogs[t] for t in tasks)
        assert store.rewinds.pending(tasks) == {t: [] for t in tasks}
    finally:
        for task in tasks:
            store.delete_task(task)
        client.close()


def _master_of(cluster_url: str, cluster: LocalCluster, task: str) -> str:
    """The name of the Redis process serving `task`'s slot (where its scripts run)."""
    client = connect_redis(RedisSettings(url=cluster_url))
    assert isinstance(client, RedisCluster)
    try:
        node = client.get_node_from_key(TaskKeys(task).sources)
        port = int(node.port)
    finally:
        client.close()
    assert cluster.state is not None
    [name] = [
        p.name
        for p in cluster.state.processes
        if p.role == "redis" and p.address is not None and f":{port}/" in p.address
    ]
    return name

"""The real servers started by the fixture answer the way Mars uses them."""

from __future__ import annotations

import threading
import time

import redis
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from devtools.local import ClusterState, LocalCluster


def test_kafka_transactional_produce_and_read_committed_consume(
    cluster: ClusterState, kafka_admin: AdminClient, unique_name: str
) -> None:
    kafka_admin.create_topics([NewTopic(unique_name, 1, 1)])[unique_name].result(timeout=30)
    producer = Producer(
        {"bootstrap.servers": cluster.kafka_bootstrap, "transactional.id": unique_name}
    )
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(unique_name, key=b"k", value=b"aborted")
    producer.abort_transaction(30)
    producer.begin_transaction()
    producer.produce(unique_name, key=b"k", value=b"committed")
    producer.commit_transaction(30)

    consumer = Consumer(
        {
            "bootstrap.servers": cluster.kafka_bootstrap,
            "group.id": unique_name,
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
        }
    )
    consumer.assign([TopicPartition(unique_name, 0, 0)])
    seen: list[bytes] = []
    for _ in range(60):
        message = consumer.poll(1.0)
        if message is None:
            continue
        if message.error():
            if seen:  # partition EOF after the committed record
                break
            continue
        seen.append(message.value())
    consumer.close()
    assert seen == [b"committed"]


def test_redis_runs_lua_with_aof_on(redis_client: redis.Redis, unique_name: str) -> None:
    script = redis_client.register_script(
        "local n = redis.call('INCR', KEYS[1]); redis.call('SET', KEYS[2], ARGV[1]); return n"
    )
    keys = [f"mars:{{{unique_name}}}:seq", f"mars:{{{unique_name}}}:d"]
    assert script(keys=keys, args=[b"payload"]) == 1
    assert script(keys=keys, args=[b"payload"]) == 2
    assert redis_client.get(keys[1]) == b"payload"
    assert redis_client.config_get("appendonly")["appendonly"] == "yes"


def test_zookeeper_create_and_watch(zk_client: KazooClient, unique_name: str) -> None:
    path = f"/test/{unique_name}"
    changed = threading.Event()
    seen: list[bytes] = []

    def on_change(data: bytes | None, stat: object) -> None:
        if data:
            seen.append(data)
            changed.set()

    zk_client.DataWatch(path, on_change)
    zk_client.create(path, b"v1", makepath=True)
    assert changed.wait(10)
    assert seen[-1] == b"v1"
    changed.clear()
    zk_client.set(path, b"v2")
    assert changed.wait(10)
    assert seen[-1] == b"v2"


def test_a_server_left_dead_is_revived_with_its_data(
    local_cluster: LocalCluster, redis_client: redis.Redis, unique_name: str
) -> None:
    """What the shared fixture does before each test when a fault test failed to restart a
    server: the same Redis comes back on its port and replays its AOF."""
    assert local_cluster.state is not None
    key = f"mars:{{{unique_name}}}:kept"
    redis_client.set(key, b"before the kill")
    time.sleep(1.5)  # appendfsync everysec: on disk within a second
    server = next(p for p in local_cluster.state.processes if p.role == "redis")
    server.handle().kill()

    assert local_cluster.revive() == [server.name]
    assert redis_client.get(key) == b"before the kill"
    assert local_cluster.revive() == []

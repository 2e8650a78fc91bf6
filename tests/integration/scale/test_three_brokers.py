"""Three Kafka brokers lose one mid-run: exactly-once beyond one machine (docs/deployment.md).

The module starts a cluster of its own as `mars local up --kafka-brokers 3` does: three KRaft
nodes (each broker and controller), every topic replicated three times with
`min.insync.replicas` 2, beside a Redis and a ZooKeeper. `mars api`, one mapper and two
reducers run on it, and the topics Mars creates (results, late, dead letters, progress) get 3
replicas and `min.insync.replicas` 2 from the cluster's settings.

The reference query (docs/references.md), with 10 s windows, runs over live traffic (1,500 records/s
for 35 s, two partitions). 15 s of traffic in, while the producer still sends, the node that is
the active KRaft controller is killed with SIGKILL, and started again a few seconds later; the
stream slows to a fifth of its rate until the node answers again, so that traffic is still flowing
when it rejoins however long its restart takes. Its partition leaderships, its share of the
transaction coordinators and the controller role move to the survivors and back. Every (window, sip,
type) must then come exactly once with the DuckDB oracle's count."""

from __future__ import annotations

import time

import pytest
from confluent_kafka.admin import AdminClient

from devtools.local import LocalCluster
from mars.clients import admin_client
from mars.config import load_settings
from mars.tasks.topics import topic_partitions
from tests.integration.pipeline import ExpectedTopic, wait_exact
from tests.integration.task_topics import topic_config
from tests.integration.watched import (
    PAPER_AGGREGATES,
    PAPER_GROUPS,
    PaperStream,
    WatchedPipeline,
    make_topic,
    windowed_sql,
)

BROKERS = 3
RATE = 1_500
PRODUCE_S = 35
KILL_AFTER_S = 15  # of produced traffic
DOWN_S = 4
PARTITIONS = 2
SEED = 23

pytestmark = [
    pytest.mark.integration,
    pytest.mark.exclusive,
    pytest.mark.own_cluster(kafka_brokers=BROKERS),
]


@pytest.mark.timeout(300)
def test_a_broker_killed_mid_stream_loses_and_doubles_nothing(
    own_cluster: LocalCluster, unique_name: str
) -> None:
    state = own_cluster.state
    assert state is not None
    assert len(state.kafka_bootstrap.split(",")) == BROKERS
    assert (state.kafka_replication_factor, state.kafka_min_insync_replicas) == (3, 2)
    admin = admin_client(state.kafka())
    topic = make_topic(admin, f"{unique_name}_src", partitions=PARTITIONS)
    sql = windowed_sql(topic, PAPER_GROUPS, PAPER_AGGREGATES, "10 s")
    token = load_settings().api.token
    with WatchedPipeline.running(
        own_cluster, name=unique_name, token=token, env={}, mappers=1, reducers=2
    ) as pipeline:
        output = pipeline.register(sql, task_id=unique_name, options={})["topics"]["output"]
        _check_replicated(admin, output)
        with PaperStream.running(
            state.kafka_bootstrap,
            topic,
            rate=RATE,
            seconds=PRODUCE_S,
            partitions=PARTITIONS,
            seed=SEED,
        ) as stream:
            stream.wait_produced(KILL_AFTER_S)
            with stream.producer.slowed():  # a slow restart leaves traffic for the rejoin
                _kill_the_controller_and_restart_it(own_cluster, admin)
            assert not stream.producer.done(), "the stream ended while the broker was down"
            expected = stream.finish()
        expectation = ExpectedTopic(output, expected, PAPER_GROUPS, tuple(PAPER_AGGREGATES))
        wait_exact(state.kafka_bootstrap, [expectation], logs=pipeline.logs)


def _check_replicated(admin: AdminClient, topic: str) -> None:
    """The task's result topic got three replicas and `min.insync.replicas` 2 (a topic just
    created may be unknown to some brokers for a moment: both helpers wait for it)."""
    partitions = topic_partitions(admin, topic)
    assert {len(p.replicas) for p in partitions.values()} == {BROKERS}
    assert topic_config(admin, topic)["min.insync.replicas"] == "2"


def _kill_the_controller_and_restart_it(cluster: LocalCluster, admin: AdminClient) -> None:
    controller = admin.describe_cluster().result(timeout=30).controller
    name = f"kafka-{controller.id}"
    killed_at = time.monotonic()
    cluster.restart("kafka", name=name, kill=True, down_s=DOWN_S)
    print(f"killed {name} (the active controller), back after {time.monotonic() - killed_at:.1f} s")

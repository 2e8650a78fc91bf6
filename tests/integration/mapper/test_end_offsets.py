"""`end_offsets` against the real broker: committed ends per partition, None when no broker
answers (what keeps an outage from passing for idleness), and answers again after the broker
restarts."""

from __future__ import annotations

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from devtools.local import ClusterState, LocalCluster
from devtools.local.process_handle import free_port
from mars.clients.end_offsets import EndOffsetQuery, end_offsets
from tests.integration.pipeline import wait_for


def test_end_offsets_are_the_committed_ends_of_each_partition(
    cluster: ClusterState, kafka_admin: AdminClient, unique_name: str
) -> None:
    topic = f"{unique_name}_ends"
    for future in kafka_admin.create_topics([NewTopic(topic, num_partitions=2)]).values():
        future.result(timeout=30)
    producer = Producer({"bootstrap.servers": cluster.kafka_bootstrap})
    for i in range(5):
        producer.produce(topic, b"x", partition=i % 2)
    assert producer.flush(30) == 0
    assert end_offsets(kafka_admin, [(topic, 0), (topic, 1)]) == {(topic, 0): 3, (topic, 1): 2}
    # A transaction still open is not the end a read_committed consumer can reach.
    transactional = Producer(
        {"bootstrap.servers": cluster.kafka_bootstrap, "transactional.id": f"{unique_name}-tx"}
    )
    transactional.init_transactions(30)
    transactional.begin_transaction()
    transactional.produce(topic, b"y", partition=0)
    transactional.flush(30)
    assert end_offsets(kafka_admin, [(topic, 0)]) == {(topic, 0): 3}
    transactional.commit_transaction(30)
    # The coordinator writes the commit marker after the commit returns: the end moves soon.
    wait_for(
        lambda: end_offsets(kafka_admin, [(topic, 0)]) == {(topic, 0): 5},  # record + marker
        timeout_s=15,
        what="the committed transaction's end offset",
    )
    kafka_admin.delete_topics([topic])


def test_no_broker_no_answer() -> None:
    nobody = AdminClient({"bootstrap.servers": f"127.0.0.1:{free_port()}"})
    assert end_offsets(nobody, [("topic", 0)], timeout_s=0.5) is None
    assert end_offsets(nobody, []) == {}


def test_the_query_answers_again_after_a_broker_restart(
    local_cluster: LocalCluster, cluster: ClusterState, kafka_admin: AdminClient, unique_name: str
) -> None:
    """A client that cached leader epochs before a broker restart gets FENCED_LEADER_EPOCH
    for good; `EndOffsetQuery` rebuilds its client after a failure and answers again."""
    topic = f"{unique_name}_restart"
    kafka_admin.create_topics([NewTopic(topic, num_partitions=1)])[topic].result(timeout=30)
    producer = Producer({"bootstrap.servers": cluster.kafka_bootstrap})
    producer.produce(topic, b"x", partition=0)
    assert producer.flush(30) == 0
    query = EndOffsetQuery(lambda: AdminClient({"bootstrap.servers": cluster.kafka_bootstrap}))
    # A new client connects and reads metadata within the query's 1 s, or answers None (the
    # mapper asks again at its next heartbeat): on a busy machine the first try may miss.
    wait_for(
        lambda: query.ends([(topic, 0)]) == {(topic, 0): 1},
        timeout_s=30,
        what="a first end offset answered",
    )
    local_cluster.restart("kafka")
    wait_for(
        lambda: query.ends([(topic, 0)]) == {(topic, 0): 1},
        timeout_s=60,
        what="an end offset answered after the broker restart",
    )
    kafka_admin.delete_topics([topic])

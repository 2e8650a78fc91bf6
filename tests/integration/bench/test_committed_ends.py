"""Real Kafka: the harness's poller of committed ends (`benchmarks/committed_ends.py`) sees a
transaction's records only once it commits, and soon after, so a result reader can say when
its rows became readable."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from benchmarks.committed_ends import CommittedEnds
from devtools.local import ClusterState
from mars.tasks.topics import Replication, TopicPlan, ensure_topics
from tests.integration.pipeline import wait_for

SEEN_WITHIN_S = 5.0


@pytest.fixture
def topic(kafka_admin: AdminClient, unique_name: str) -> str:
    ensure_topics(kafka_admin, [TopicPlan(name=unique_name, partitions=2)], Replication())
    return unique_name


@pytest.fixture
def ends(cluster: ClusterState, topic: str) -> Iterator[CommittedEnds]:
    polled = CommittedEnds(cluster.kafka(), [(topic, 0), (topic, 1)]).start()
    yield polled
    polled.stop()


def test_records_count_as_readable_from_their_commit(
    cluster: ClusterState, topic: str, ends: CommittedEnds
) -> None:
    producer = Producer(
        {"bootstrap.servers": cluster.kafka_bootstrap, "transactional.id": f"{topic}-writer"}
    )
    producer.init_transactions(30)
    producer.begin_transaction()
    for i in range(3):
        producer.produce(topic, b"{}", str(i).encode(), 0)
    producer.flush(30)  # written, not committed: read_committed readers do not see them yet
    time.sleep(0.3)
    assert ends.readable_at((topic, 0), 0) is None

    committing = time.time()
    producer.commit_transaction(30)
    committed = time.time()
    wait_for(
        lambda: ends.readable_at((topic, 0), 2) is not None,
        timeout_s=SEEN_WITHIN_S,
        what="the committed end seen past offset 2",
    )
    at = ends.readable_at((topic, 0), 2)
    assert at is not None
    assert committing <= at <= committed + SEEN_WITHIN_S
    assert ends.readable_at((topic, 0), 4) is None  # past the commit marker (offset 3)
    assert ends.readable_at((topic, 1), 0) is None  # nothing written there

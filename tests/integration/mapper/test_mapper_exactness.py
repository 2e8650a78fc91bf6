"""The mapper cluster end to end: real Kafka, ZooKeeper, Redis and `mars mapper` subprocesses.

One stream of the reference tuples (300,000 generated records, 20 fields, 4 partitions; a
million with `make test-long`: `MARS_TEST_MAPPER_RECORDS`) is produced once per module and
shared; every test registers its own task on it under its own ZooKeeper root and consumer
group, and compares the merge of everything the mappers wrote to Redis with the DuckDB oracle
over the produced records.
"""

from __future__ import annotations

import os
import signal
import time
import uuid
from dataclasses import dataclass

import pytest
from confluent_kafka.admin import AdminClient
from kazoo.client import KazooClient

from devtools.gen import GeneratorConfig, generate
from devtools.gen.partitioning import PartitionStrategy
from devtools.gen.produce import produce
from devtools.local import ClusterState
from mars.store import SeqStore
from tests.integration.mapper.conftest import MapperGroupFactory
from tests.integration.mapper.mapper_harness import (
    PAPER_ORACLE,
    all_applied,
    create_topic,
    merge_all,
    register_task,
    results_of,
    wait_until,
)
from tests.oracle import ExpectedResults, expected_results

pytestmark = pytest.mark.integration

RECORDS = int(os.environ.get("MARS_TEST_MAPPER_RECORDS", "300000"))
PARTITIONS = 4


@dataclass(frozen=True)
class ProducedStream:
    topic: str
    end_offsets: dict[int, int]
    expected: ExpectedResults


@pytest.fixture(scope="module")
def paper_stream(cluster: ClusterState, kafka_admin: AdminClient) -> ProducedStream:
    topic = f"paper_{uuid.uuid4().hex[:8]}"
    create_topic(kafka_admin, topic, partitions=PARTITIONS)
    config = GeneratorConfig(count=RECORDS, seed=11, span_s=1800, sip_cardinality=2000)
    report = produce(cluster.kafka(), topic, config, strategy=PartitionStrategy.ROUND_ROBIN)
    expected = expected_results(generate(config).values, **PAPER_ORACLE)
    return ProducedStream(topic=topic, end_offsets=dict(report.per_partition), expected=expected)


def test_two_mappers_map_every_record_exactly(
    paper_stream: ProducedStream,
    mapper_group: MapperGroupFactory,
    zk_client: KazooClient,
    store: SeqStore,
) -> None:
    group = mapper_group()
    spec = register_task(group.registry(zk_client), task_id=group.name, topic=paper_stream.topic)
    started = time.monotonic()
    group.start()
    group.start()
    wait_until(
        lambda: all_applied(store, spec.id, paper_stream.end_offsets),
        timeout_s=240,
        what="every record applied",
        logs=group.logs,
    )
    elapsed = time.monotonic() - started
    print(f"{RECORDS} records mapped by 2 mappers in {elapsed:.1f} s")

    assert results_of(spec, merge_all(store, spec)) == paper_stream.expected.results
    stats = store.counters.read(spec.id)
    assert stats["records_in"] == RECORDS
    assert stats.get("bad", 0) == 0 and stats.get("late", 0) == 0


@pytest.mark.parametrize("consumer", ["native", "confluent"])
def test_sigkill_and_rebalance_mid_stream_still_exact(
    consumer: str,
    paper_stream: ProducedStream,
    mapper_group: MapperGroupFactory,
    zk_client: KazooClient,
    store: SeqStore,
) -> None:
    """Both source consumers (`mapper.consumer`) through a kill and two rebalances."""
    group = mapper_group(MARS_MAPPER__CONSUMER=consumer)
    spec = register_task(group.registry(zk_client), task_id=group.name, topic=paper_stream.topic)
    victim = group.start()
    group.start()

    def mapped() -> int:
        return store.counters.read(spec.id).get("records_in", 0)

    wait_until(lambda: mapped() >= RECORDS // 4, timeout_s=120, what="a quarter", logs=group.logs)
    victim.send_signal(signal.SIGKILL)  # mid-batch, without leaving the group
    victim.wait()
    killed_at = mapped()
    wait_until(
        lambda: mapped() >= min(RECORDS, killed_at + RECORDS // 8),
        timeout_s=120,
        what="the survivor to take over",
        logs=group.logs,
    )
    group.start()  # a third member joins: another rebalance mid-stream
    wait_until(
        lambda: all_applied(store, spec.id, paper_stream.end_offsets),
        timeout_s=240,
        what="every record applied",
        logs=group.logs,
    )

    assert results_of(spec, merge_all(store, spec)) == paper_stream.expected.results
    assert store.counters.read(spec.id)["records_in"] == RECORDS

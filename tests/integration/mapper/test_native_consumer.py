"""The native batch consumer (`mars_native`, Rust) against a real broker: the same records as
confluent-kafka's consumer, group rebalances through the mapper's callbacks, and the control
calls (seek, pause, resume, position, commit, list_topics) with confluent-kafka's types and
errors."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator

import pytest
from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient

from devtools.local import ClusterState
from mapper.partition_batches import group_by_partition
from mars.clients.native_consumer import NativeConsumer
from mars.engine.records import TopicBatches
from mars.native import native_available
from tests.integration.mapper.mapper_harness import create_topic

PARTITIONS = 3
PER_PARTITION = 2_000


def test_the_extension_is_built() -> None:
    """`make setup` builds it; without it the mapper would silently run the slower path."""
    assert native_available()


@pytest.fixture
def topic(cluster: ClusterState, kafka_admin: AdminClient, unique_name: str) -> str:
    """PER_PARTITION records in each partition; among them a tombstone (no value) and values
    holding newlines (the native consumer joins values with newlines: their ends must still
    say where each one ends)."""
    create_topic(kafka_admin, unique_name, partitions=PARTITIONS)
    producer = Producer({"bootstrap.servers": cluster.kafka_bootstrap})
    special = {7: None, 9: b"\n", 10: b"two\nlines\n"}
    for partition in range(PARTITIONS):
        for i in range(PER_PARTITION):
            value = special.get(i, f"p{partition},r{i},{'x' * (i % 50)}".encode())
            producer.produce(unique_name, value=value, partition=partition)
    assert producer.flush(30) == 0
    return unique_name


def config(cluster: ClusterState, group: str | None = None) -> dict[str, object]:
    return {
        "bootstrap.servers": cluster.kafka_bootstrap,
        "group.id": group or f"native-{uuid.uuid4().hex[:8]}",
        "enable.auto.commit": False,
        "isolation.level": "read_committed",
        "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 500,
    }


GROUP = "native-consumer-tests"


@pytest.fixture
def native(cluster: ClusterState, unique_name: str) -> Iterator[NativeConsumer]:
    consumer = NativeConsumer(config(cluster, f"{GROUP}-{unique_name}"))
    yield consumer
    consumer.close()


Read = dict[int, tuple[list[int], list[bytes]]]  # partition -> (offsets, values)


def read_all(consume: Callable[[], TopicBatches], total: int, timeout_s: float = 30) -> Read:
    """`total` records, batch after batch."""
    out: Read = {}
    deadline = time.monotonic() + timeout_s
    count = 0
    while count < total and time.monotonic() < deadline:
        for partitions in consume().values():
            for partition, batch in partitions.items():
                offsets, values = out.setdefault(partition, ([], []))
                offsets += batch.offsets
                values += batch.values
                count += len(batch)
    return out


def test_batches_hold_exactly_what_confluent_kafka_reads(
    cluster: ClusterState, topic: str, native: NativeConsumer
) -> None:
    start = [TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)]
    native.assign(start)
    got = read_all(lambda: native.consume_grouped(500, 0.5), PARTITIONS * PER_PARTITION)

    reference = Consumer(config(cluster))
    reference.assign(start)
    expected = read_all(
        lambda: group_by_partition(reference.consume(num_messages=500, timeout=0.5)),
        PARTITIONS * PER_PARTITION,
    )
    reference.close()

    assert got == expected
    for partition, (offsets, values) in got.items():
        assert offsets == list(range(PER_PARTITION))  # in offset order, none twice
        assert values[7] == b""  # the tombstone, as group_by_partition reads it
        assert values[8] == f"p{partition},r8,{'x' * 8}".encode()
        assert values[9:12] == [b"\n", b"two\nlines\n", f"p{partition},r11,{'x' * 11}".encode()]


def test_a_batch_is_at_most_the_size_asked_and_waits_at_most_the_timeout(
    topic: str, native: NativeConsumer
) -> None:
    native.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    deadline = time.monotonic() + 30
    sizes: list[int] = []
    while sum(sizes) < PER_PARTITION and time.monotonic() < deadline:
        batch = native.consume_grouped(300, 0.5)
        sizes.append(sum(len(b) for ps in batch.values() for b in ps.values()))
    assert sum(sizes) == PER_PARTITION and max(sizes) == 300

    started = time.monotonic()
    assert native.consume_grouped(300, 0.3) == {}  # nothing left: waits, then empty
    assert 0.25 <= time.monotonic() - started < 2.0


def test_a_batch_shares_out_among_partitions_with_records_waiting(
    topic: str, native: NativeConsumer
) -> None:
    """Each partition is read from its own queue: a batch takes an even share of each queue
    that holds records, so no partition waits behind a busy one. (One fetch response holds
    every partition's records one partition after the other: read in that order, a batch of
    300 would hold only the first partition's.)"""
    native.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    first = native.consume_grouped(3, 5.0)  # fetching has started
    time.sleep(2.0)  # librdkafka prefetches every partition (queued.min.messages: 100,000)
    batch = native.consume_grouped(300, 1.0)[topic]
    # Records fetched before a partition's queue was split off come first, in fetch order
    # (from the consumer queue): the shares are even within what is left after them.
    assert sum(map(len, batch.values())) == 300
    assert len(batch) == PARTITIONS and min(map(len, batch.values())) >= 50, batch
    for partition, part in batch.items():  # each continues where the first batch stopped
        start = len(first.get(topic, {}).get(partition, ()))
        assert part.offsets == list(range(start, start + len(part)))


def test_seek_pause_resume_position_and_commit(
    cluster: ClusterState, topic: str, native: NativeConsumer, unique_name: str
) -> None:
    native.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    read_all(lambda: native.consume_grouped(1000, 0.5), PARTITIONS * PER_PARTITION)
    positions = native.position([TopicPartition(topic, p) for p in range(PARTITIONS)])
    assert [(tp.partition, tp.offset) for tp in positions] == [
        (p, PER_PARTITION) for p in range(PARTITIONS)
    ]

    native.seek(TopicPartition(topic, 1, 1_500))  # back: these 500 records again
    native.pause([TopicPartition(topic, 1)])
    assert native.consume_grouped(1000, 0.5) == {}  # paused: nothing
    native.resume([TopicPartition(topic, 1)])
    again = read_all(lambda: native.consume_grouped(1000, 0.5), 500)
    assert list(again) == [1] and again[1][0] == list(range(1_500, PER_PARTITION))

    with pytest.raises(KafkaException):  # not assigned: confluent-kafka's error type
        native.seek(TopicPartition(topic + "-missing", 0, 0))

    native.commit(offsets=[TopicPartition(topic, 2, 1_234)], asynchronous=False)
    reader = Consumer(config(cluster, f"{GROUP}-{unique_name}"))
    committed = reader.committed([TopicPartition(topic, 2)], timeout=10)
    reader.close()
    assert committed[0].offset == 1_234

    found = native.list_topics(timeout=10).topics[topic]
    assert len(found.partitions) == PARTITIONS and found.error is None


def test_rebalances_call_the_callbacks_with_confluent_kafka_types(
    cluster: ClusterState, topic: str
) -> None:
    """Two members of one group: the first gets every partition, shares them when the second
    joins, and gets them all back when it leaves; every callback assigns or unassigns."""
    group = f"native-{uuid.uuid4().hex[:8]}"
    events: dict[str, list[tuple[str, list[int]]]] = {"a": [], "b": []}

    def member(name: str) -> NativeConsumer:
        consumer = NativeConsumer(config(cluster, group))

        def on_assign(c: NativeConsumer, partitions: list[TopicPartition]) -> None:
            assert all(isinstance(tp, TopicPartition) for tp in partitions)
            events[name].append(("assign", sorted(tp.partition for tp in partitions)))
            c.assign(partitions)

        def on_revoke(c: NativeConsumer, partitions: list[TopicPartition]) -> None:
            events[name].append(("revoke", sorted(tp.partition for tp in partitions)))
            c.unassign()

        consumer.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_revoke)
        return consumer

    def owned(name: str) -> list[int]:
        assigned = [parts for kind, parts in events[name] if kind == "assign"]
        revoked = [parts for kind, parts in events[name] if kind == "revoke"]
        return assigned[-1] if len(assigned) > len(revoked) else []

    def poll_until(check: Callable[[], object], *members: NativeConsumer) -> None:
        deadline = time.monotonic() + 60
        while not check():
            assert time.monotonic() < deadline, events
            for consumer in members:
                consumer.consume_grouped(100, 0.1)

    a = member("a")
    poll_until(lambda: owned("a") == list(range(PARTITIONS)), a)
    b = member("b")
    poll_until(lambda: owned("a") and owned("b") and len(owned("a") + owned("b")) == 3, a, b)
    assert sorted(owned("a") + owned("b")) == list(range(PARTITIONS))
    b.close()  # leaves the group: its revoke callback runs inside close
    assert events["b"][-1][0] == "revoke"
    poll_until(lambda: owned("a") == list(range(PARTITIONS)), a)
    a.close()


def test_an_error_in_a_callback_comes_out_of_consume(cluster: ClusterState, topic: str) -> None:
    consumer = NativeConsumer(config(cluster))

    def on_assign(c: NativeConsumer, partitions: list[TopicPartition]) -> None:
        raise RuntimeError("callback failed")

    def on_revoke(c: NativeConsumer, partitions: list[TopicPartition]) -> None:
        c.unassign()

    consumer.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_revoke)
    deadline = time.monotonic() + 30
    with pytest.raises(RuntimeError, match="callback failed"):
        while time.monotonic() < deadline:
            consumer.consume_grouped(100, 0.2)
    consumer.close()


def test_a_rebalance_inside_a_batch_never_repeats_or_reorders_offsets(
    cluster: ClusterState, topic: str
) -> None:
    """A batch that spans a rebalance: librdkafka's own batch consume drops what it collected
    for revoked partitions; so must the native one. Here the first member has read every
    record, then a second member joins during the same (long) consume; the first is assigned
    its share again from the earliest offset (nothing is committed), so keeping the records
    read before the rebalance would give one partition the same offsets twice in the batch."""
    group = f"native-{uuid.uuid4().hex[:8]}"

    def member() -> NativeConsumer:
        consumer = NativeConsumer({**config(cluster, group), "auto.offset.reset": "earliest"})
        consumer.subscribe(
            [topic],
            on_assign=lambda c, partitions: c.assign(partitions),
            on_revoke=lambda c, partitions: c.unassign(),
            on_lost=lambda c, partitions: c.unassign(),
        )
        return consumer

    first = member()
    deadline = time.monotonic() + 30
    everything = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    while all(tp.offset < 0 for tp in first.position(everything)):  # joined and reading
        assert time.monotonic() < deadline
        first.consume_grouped(10, 0.2)
    batch: list[TopicBatches] = []
    reader = threading.Thread(target=lambda: batch.append(first.consume_grouped(10**6, 8.0)))
    reader.start()
    time.sleep(1.0)  # the first member has read everything and waits inside consume
    second = member()
    while reader.is_alive():
        second.consume_grouped(100, 0.1)  # joins the group: the rebalance hits the first
    second.close()
    first.close()

    partitions = batch[0].get(topic, {})
    assert partitions, "the first member kept no share after the rebalance"
    for read in partitions.values():
        assert read.offsets == sorted(set(read.offsets)), "offsets repeated or out of order"

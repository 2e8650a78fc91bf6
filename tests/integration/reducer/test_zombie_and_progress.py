"""Real Kafka: zombie owners are fenced, progress is read back exactly as committed."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from devtools.local import ClusterState
from mars.config import KafkaSettings, Settings
from mars.store import SeqStore
from mars.tasks.spec import TaskSpec
from mars.tasks.topics import (
    PROGRESS_TOPIC,
    PROGRESS_TOPIC_PLAN,
    Replication,
    TopicPlan,
    ensure_topics,
)
from reducer import progress_reader
from reducer.output import FencedError, OutRecord, TransactionalOutput, transactional_id
from reducer.progress_reader import read_progress
from reducer.progress_record import ProgressRecord, partition_for, progress_key
from reducer.unit_owner import OwnerWiring, UnitOwner
from tests.integration.reducer.cluster_harness import assert_counted_once
from tests.integration.reducer.harness import FakeClock, ScriptedMapper
from tests.integration.reducer.test_owner_recovery import produce
from tests.integration.reducer.test_window_semantics import count_spec


@pytest.fixture
def progress_topic(kafka_admin: AdminClient, settings: Settings) -> str:
    ensure_topics(kafka_admin, [PROGRESS_TOPIC_PLAN], Replication.of(settings.kafka))
    return PROGRESS_TOPIC


def read_back(cluster: ClusterState, key: str, *, timeout_s: float = 90.0) -> ProgressRecord | None:
    """`read_progress` of `key` from the cluster's progress topic."""
    return read_progress(
        kafka=cluster.kafka(),
        topic=PROGRESS_TOPIC,
        key=key,
        partitions=PROGRESS_TOPIC_PLAN.partitions,
        timeout_s=timeout_s,
    )


def real_owner(
    spec: TaskSpec, store: SeqStore, clock: FakeClock, cluster: ClusterState
) -> UnitOwner:
    key = progress_key(spec.id, 0)
    return UnitOwner(
        spec=spec,
        unit_bucket=0,
        buckets=[0],
        wiring=OwnerWiring(
            store=store,
            make_output=lambda: TransactionalOutput(
                kafka=cluster.kafka(),
                transactional_id=transactional_id(spec.id, 0),
                transaction_timeout_ms=10_000,
            ),
            read_progress=lambda: read_back(cluster, key),
            metrics=None,
            progress_topic=PROGRESS_TOPIC,
            progress_partitions=PROGRESS_TOPIC_PLAN.partitions,
            clock=clock,
        ),
        settings=Settings().reducer,
        member_id="test",
    )


def assert_zombie_fenced(
    spec: TaskSpec,
    store: SeqStore,
    cluster: ClusterState,
    owner: Callable[[FakeClock], UnitOwner],
    successor: Callable[[FakeClock], UnitOwner],
    *,
    cut_off: Callable[[], None] = lambda: None,
) -> None:
    """An owner commits, is `cut_off`, and goes on while its successor recovers: the
    successor's recovery fences it, its next commit fails, and every row comes exactly once."""
    clock = FakeClock()
    mapper = ScriptedMapper(spec, store, clock)
    mapper.heartbeat(caught_up=False)
    rng = random.Random(5)
    expected = produce(mapper, rng, 70)
    old = owner(clock)
    assert old.step().committed
    expected += produce(mapper, rng, 70)
    cut_off()
    new = successor(clock)
    new.recover()
    with pytest.raises(FencedError):
        old.step()
    assert new.step().committed
    clock.advance(5_000)
    mapper.heartbeat(caught_up=True)
    new.step()
    assert_counted_once(cluster.kafka_bootstrap, spec.output_topic, expected)


def test_zombie_owner_cannot_commit_and_results_stay_exactly_once(
    cluster: ClusterState,
    kafka_admin: AdminClient,
    settings: Settings,
    progress_topic: str,
    store: SeqStore,
    task_id: str,
) -> None:
    """With a producer per unit, the successor's init_transactions is the fence."""
    spec = count_spec(task_id)
    ensure_topics(kafka_admin, [TopicPlan(name=spec.output_topic, partitions=2)], Replication())

    def owner(clock: FakeClock) -> UnitOwner:
        return real_owner(spec, store, clock, cluster)

    assert_zombie_fenced(spec, store, cluster, owner, owner)


def test_progress_read_waits_for_an_open_transaction_of_another_unit(
    cluster: ClusterState, progress_topic: str, unique_name: str
) -> None:
    key = f"{unique_name}/0"
    partition = partition_for(key, PROGRESS_TOPIC_PLAN.partitions)
    mine = TransactionalOutput(
        kafka=cluster.kafka(),
        transactional_id=f"test.{unique_name}.mine",
        transaction_timeout_ms=20_000,
    )
    other = TransactionalOutput(
        kafka=cluster.kafka(),
        transactional_id=f"test.{unique_name}.other",
        transaction_timeout_ms=20_000,
    )
    mine.start()
    other.start()

    def record(watermark: int) -> OutRecord:
        progress = ProgressRecord(closed_watermark=watermark, rseqs={0: watermark}, merged={0: 0})
        return OutRecord(
            topic=progress_topic, key=key.encode(), value=progress.to_bytes(), partition=partition
        )

    mine.commit([record(1)])
    # Another unit's transaction opens in the same partition and stays open for a while ...
    other_producer = other._producer
    other_producer.begin_transaction()
    other_producer.produce(progress_topic, key=b"someone/else", value=b"{}", partition=partition)
    other_producer.flush(10)
    mine.commit([record(2)])  # ... so this record sits behind the last stable offset
    closer = threading.Timer(3.0, lambda: other_producer.commit_transaction(10))
    closer.start()
    started = time.monotonic()
    progress = read_back(cluster, key, timeout_s=30)
    closer.join()
    assert progress is not None and progress.closed_watermark == 2
    assert time.monotonic() - started >= 2.0
    mine.close()


def test_progress_read_does_not_wait_for_transactions_opened_after_it_started(
    cluster: ClusterState, progress_topic: str, unique_name: str
) -> None:
    """Dozens of owners committing into one progress partition leave a transaction open there
    at almost every moment: the read waits only for those open when it started, not for a
    moment with none open (owners of ten tasks started at once waited 15 s for it)."""
    key = f"{unique_name}/0"
    partition = partition_for(key, PROGRESS_TOPIC_PLAN.partitions)
    mine, first, second = (
        TransactionalOutput(
            kafka=cluster.kafka(),
            transactional_id=f"test.{unique_name}.{name}",
            transaction_timeout_ms=20_000,
        )
        for name in ("mine", "first", "second")
    )
    for output in (mine, first, second):
        output.start()
    progress = ProgressRecord(closed_watermark=7, rseqs={0: 7}, merged={0: 0})
    mine.commit(
        [
            OutRecord(
                topic=progress_topic,
                key=key.encode(),
                value=progress.to_bytes(),
                partition=partition,
            )
        ]
    )
    stop = threading.Event()

    def open_transaction(output: TransactionalOutput) -> None:
        output._producer.begin_transaction()
        output._producer.produce(progress_topic, key=b"other", value=b"{}", partition=partition)
        output._producer.flush(10)

    def overlapping() -> None:
        """Each of two units commits only once the other has opened its next transaction."""
        open_transaction(first)
        while not stop.is_set():
            open_transaction(second)
            time.sleep(0.1)
            first._producer.commit_transaction(10)
            open_transaction(first)
            time.sleep(0.1)
            second._producer.commit_transaction(10)
        first._producer.commit_transaction(10)

    others = threading.Thread(target=overlapping)
    others.start()
    try:
        time.sleep(0.5)  # a transaction is open in the partition from here on
        started = time.monotonic()
        found = read_back(cluster, key, timeout_s=15)
        elapsed = time.monotonic() - started
    finally:
        stop.set()
        others.join()
    assert found is not None and found.closed_watermark == 7
    assert elapsed < 10
    for output in (mine, first, second):
        output.close()


def test_no_progress_reads_as_none(cluster: ClusterState, progress_topic: str) -> None:
    assert read_back(cluster, "never-committed/0", timeout_s=30) is None


def test_reads_at_once_each_find_their_own_key(
    cluster: ClusterState, progress_topic: str, unique_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Forty owners recovering at once, over every progress partition, while every scan slot is
    busy: each read finds its own key's newest record (the reads share one high-watermark
    probe), and the reads of one partition share one scan. The slots are held until all forty
    have queued: with a slot free a scan starts at once, and how many reads join it then
    depends on the machine's speed (26 scans for the 40 in one loaded CI run)."""
    scans: list[frozenset[bytes]] = []
    scan_partition = progress_reader._read

    def counted(kafka: KafkaSettings, **kwargs: Any) -> dict[bytes, bytes]:
        scans.append(kwargs["wanted"])
        return scan_partition(kafka, **kwargs)

    monkeypatch.setattr(progress_reader, "_read", counted)
    units = [f"{unique_name}/{bucket}" for bucket in range(40)]
    producer = Producer({"bootstrap.servers": cluster.kafka_bootstrap})
    for watermark, key in enumerate(units):
        newest = ProgressRecord(closed_watermark=watermark, rseqs={0: watermark}, merged={0: 0})
        for record in (ProgressRecord.initial([0]), newest):  # the newest of the key must win
            producer.produce(
                progress_topic,
                key=key.encode(),
                value=record.to_bytes(),
                partition=partition_for(key, PROGRESS_TOPIC_PLAN.partitions),
            )
    assert producer.flush(30) == 0
    found: dict[str, int | None] = {}

    def read(key: str) -> None:
        record = read_back(cluster, key, timeout_s=60)
        found[key] = None if record is None else record.closed_watermark

    threads = [threading.Thread(target=read, args=(key,)) for key in units]
    held = 0  # scan slots taken, each released however the wait ends
    try:
        for _ in range(progress_reader.SCANS_AT_ONCE):
            assert progress_reader._scan_slots.acquire(timeout=5)
            held += 1
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 60
        while queued_reads(progress_topic) < len(units):
            assert time.monotonic() < deadline, f"{queued_reads(progress_topic)} reads queued"
            time.sleep(0.01)
    finally:
        for _ in range(held):
            progress_reader._scan_slots.release()
    for thread in threads:
        thread.join(timeout=120)
    assert found == {key: watermark for watermark, key in enumerate(units)}
    partitions = {partition_for(key, PROGRESS_TOPIC_PLAN.partitions) for key in units}
    assert len(partitions) == PROGRESS_TOPIC_PLAN.partitions  # every partition has reads
    assert sum(map(len, scans)) == len(units)
    assert len(scans) == len(partitions)


def queued_reads(topic: str) -> int:
    """The reads of `topic` waiting in scans that have not started."""
    with progress_reader._waiting_lock:
        return sum(
            len(scan.wanted)
            for where, scan in progress_reader._waiting.items()
            if where[1] == topic
        )

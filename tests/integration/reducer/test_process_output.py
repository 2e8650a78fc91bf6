"""Real Kafka and ZooKeeper: one producer per reducer process (`reducer/process_output.py`).

A unit changes hands only after its holder released it or was fenced, so a zombie's
transaction never lands, and the owners' commits share one transaction."""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator

import pytest
from confluent_kafka.admin import AdminClient
from kazoo.client import KazooClient

from devtools.local import ClusterState
from mars.config import Settings
from mars.registry.paths import ZkPaths
from mars.registry.unit_holders import UnitHolders
from mars.registry.units import Unit
from mars.store import SeqStore
from mars.tasks.spec import TaskSpec
from mars.tasks.topics import (
    PROGRESS_TOPIC,
    PROGRESS_TOPIC_PLAN,
    Replication,
    TopicPlan,
    ensure_topics,
)
from reducer.output import FencedError, OutputError, OutRecord, ToWrite
from reducer.process_output import ProcessOutput
from reducer.progress_record import progress_key
from reducer.unit_owner import OwnerWiring, UnitOwner
from tests.integration.reducer.cluster_harness import CommittedReader, assert_counted_once
from tests.integration.reducer.harness import FakeClock, ScriptedMapper
from tests.integration.reducer.test_owner_recovery import produce
from tests.integration.reducer.test_window_semantics import count_spec
from tests.integration.reducer.test_zombie_and_progress import (
    assert_zombie_fenced,
    progress_topic,
    read_back,
)

__all__ = ["progress_topic"]  # the fixture, used by name


@pytest.fixture
def holders_root(zk_client: KazooClient, unique_name: str) -> Iterator[ZkPaths]:
    paths = ZkPaths(root=f"/{unique_name}")
    yield paths
    zk_client.delete(paths.root, recursive=True)


@pytest.fixture
def topic(kafka_admin: AdminClient, task_id: str) -> str:
    """The task's output topic, of one partition."""
    name = count_spec(task_id).output_topic
    ensure_topics(kafka_admin, [TopicPlan(name=name, partitions=1)], Replication())
    return name


def process_output(cluster: ClusterState, zk: KazooClient, paths: ZkPaths) -> ProcessOutput:
    return ProcessOutput(
        kafka=cluster.kafka(),
        holders=UnitHolders(zk, paths),
        member_id="test",
        transaction_timeout_ms=10_000,
        compression="lz4",
    )


def owner_on(
    process: ProcessOutput, spec: TaskSpec, store: SeqStore, clock: FakeClock, cluster: ClusterState
) -> UnitOwner:
    return UnitOwner(
        spec=spec,
        unit_bucket=0,
        buckets=[0],
        wiring=OwnerWiring(
            store=store,
            make_output=lambda: process.unit_output(Unit(spec.id, 0), may_take=lambda: True),
            read_progress=lambda: read_back(cluster, progress_key(spec.id, 0)),
            metrics=None,
            progress_topic=PROGRESS_TOPIC,
            progress_partitions=PROGRESS_TOPIC_PLAN.partitions,
            clock=clock,
        ),
        settings=Settings().reducer,
        member_id="test",
    )


def new_session(cluster: ClusterState) -> KazooClient:
    client = KazooClient(hosts=cluster.zk_hosts, timeout=10)
    client.start(timeout=15)
    return client


def at_once(steps: list[Callable[[], object]]) -> None:
    threads = [threading.Thread(target=step) for step in steps]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)


def test_a_gone_incarnation_is_fenced_and_its_zombie_owner_cannot_commit(
    cluster: ClusterState,
    kafka_admin: AdminClient,
    progress_topic: str,
    store: SeqStore,
    task_id: str,
    holders_root: ZkPaths,
) -> None:
    """The old incarnation's session ends (its node goes) while its owner still runs: the
    next holder fences its producer before reading the progress."""
    spec = count_spec(task_id)
    ensure_topics(kafka_admin, [TopicPlan(name=spec.output_topic, partitions=2)], Replication())
    old_session, new_zk = new_session(cluster), new_session(cluster)
    old_process = process_output(cluster, old_session, holders_root)
    new_process = process_output(cluster, new_zk, holders_root)
    try:
        assert_zombie_fenced(
            spec,
            store,
            cluster,
            lambda clock: owner_on(old_process, spec, store, clock, cluster),
            lambda clock: owner_on(new_process, spec, store, clock, cluster),
            cut_off=old_session.stop,  # its ephemeral node goes; the owner runs on
        )
    finally:
        new_process.close()
        old_process.close()
        old_session.close()
        new_zk.stop()
        new_zk.close()


def test_a_live_holder_keeps_the_unit_until_it_releases_it(
    cluster: ClusterState,
    zk_client: KazooClient,
    store: SeqStore,
    task_id: str,
    holders_root: ZkPaths,
) -> None:
    spec = count_spec(task_id)
    unit = Unit(spec.id, 0)
    first = process_output(cluster, zk_client, holders_root)
    second = process_output(cluster, zk_client, holders_root)
    try:
        held = first.unit_output(unit, may_take=lambda: True)
        held.start()
        taken = threading.Event()

        def take() -> None:
            second.unit_output(unit, may_take=lambda: True).start()
            taken.set()

        taker = threading.Thread(target=take)
        taker.start()
        time.sleep(1.0)
        assert not taken.is_set(), "took a unit a live incarnation still holds"
        held.close()  # released after its last transaction
        taker.join(timeout=10)
        assert taken.is_set()
        assert first.usable(), "a released unit was taken by fencing its holder"
        holder = UnitHolders(zk_client, holders_root).read(spec.id, 0).holder
        assert holder is not None and holder.incarnation == second.incarnation
    finally:
        second.close()
        first.close()


def test_a_unit_moved_away_is_not_taken(
    cluster: ClusterState, zk_client: KazooClient, task_id: str, holders_root: ZkPaths
) -> None:
    process = process_output(cluster, zk_client, holders_root)
    try:
        with pytest.raises(OutputError, match="not the owner"):
            process.unit_output(Unit(task_id, 0), may_take=lambda: False).start()
    finally:
        process.close()


def test_owners_commit_together_and_exactly_once(
    cluster: ClusterState,
    kafka_admin: AdminClient,
    progress_topic: str,
    store: SeqStore,
    task_id: str,
    holders_root: ZkPaths,
    zk_client: KazooClient,
) -> None:
    """Two tasks' owners on one process producer, stepping at once."""
    specs = [count_spec(f"{task_id}-{i}") for i in range(2)]
    process = process_output(cluster, zk_client, holders_root)
    clock = FakeClock()
    expected: dict[str, Counter[tuple[int, str]]] = {}
    owners: list[UnitOwner] = []
    mappers: list[ScriptedMapper] = []
    try:
        for i, spec in enumerate(specs):
            ensure_topics(
                kafka_admin, [TopicPlan(name=spec.output_topic, partitions=2)], Replication()
            )
            mapper = ScriptedMapper(spec, store, clock)
            mappers.append(mapper)
            mapper.heartbeat(caught_up=False)
            expected[spec.id] = produce(mapper, random.Random(i), 60)
            owners.append(owner_on(process, spec, store, clock, cluster))
        at_once([owner.step for owner in owners])
        clock.advance(5_000)
        for mapper in mappers:
            mapper.heartbeat(caught_up=True)
        at_once([owner.step for owner in owners])  # closes the last windows
        for spec in specs:
            assert_counted_once(cluster.kafka_bootstrap, spec.output_topic, expected[spec.id])
    finally:
        for owner in owners:
            owner.close()
        process.close()


def test_a_release_zookeeper_did_not_take_stays_to_do_and_the_next_holder_fences(
    cluster: ClusterState,
    zk_client: KazooClient,
    task_id: str,
    topic: str,
    holders_root: ZkPaths,
) -> None:
    session = new_session(cluster)
    first = process_output(cluster, session, holders_root)
    second = process_output(cluster, zk_client, holders_root)
    unit = Unit(task_id, 0)
    try:
        held = first.unit_output(unit, may_take=lambda: True)
        held.start()
        session.stop()  # ZooKeeper out of reach: the release cannot land
        held.close()
        assert unit in first.held_units()
        second.unit_output(unit, may_take=lambda: True).start()  # fences the gone incarnation
        with pytest.raises(FencedError):
            first.commit([OutRecord(topic, b"k", b"from the fenced incarnation")])
        holder = UnitHolders(zk_client, holders_root).read(task_id, 0).holder
        assert holder is not None and holder.incarnation == second.incarnation
    finally:
        second.close()
        first.close()
        session.close()


class CountedTransactions:
    """Counts the transactions a process's producer writes (its `TransactionalOutput.commit`
    calls)."""

    def __init__(self, process: ProcessOutput, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        output = process._output
        write = output.commit

        def counted(records: Iterable[ToWrite]) -> None:
            self.count += 1
            write(records)

        monkeypatch.setattr(output, "commit", counted)


def handed_over_meanwhile(
    process: ProcessOutput,
    topic: str,
    other: Iterable[OutRecord],
    errors: list[Exception],
    *,
    then_wait_s: float = 0.0,
) -> Iterator[OutRecord]:
    """One record of `topic`, made `then_wait_s` after another owner's commit of `other` was
    handed over while the transaction holding this one is being written (its error, if any,
    goes to `errors`)."""

    def commit_other() -> None:
        try:
            process.commit(other)
        except OutputError as exc:
            errors.append(exc)

    thread = threading.Thread(target=commit_other)
    thread.start()
    deadline = time.monotonic() + 10
    while not process._pending and time.monotonic() < deadline:
        time.sleep(0.01)
    assert process._pending, "the other commit was not handed over"
    time.sleep(then_wait_s)
    yield OutRecord(topic, b"first", b'{"from": "first"}')


@pytest.mark.parametrize(
    ("then_wait_s", "transactions_written"),
    [(0.0, 1), (1.2, 2)],  # the transaction timeout is 10 s: commits join for 1 s
    ids=["joins", "too-late-to-join"],
)
def test_a_commit_handed_over_while_a_transaction_is_written_joins_it(
    cluster: ClusterState,
    zk_client: KazooClient,
    topic: str,
    holders_root: ZkPaths,
    monkeypatch: pytest.MonkeyPatch,
    then_wait_s: float,
    transactions_written: int,
) -> None:
    """Two owners' closes one just after the other: one transaction, both records; unless
    the transaction is too old by then, and the second waits for the next."""
    process = process_output(cluster, zk_client, holders_root)
    transactions = CountedTransactions(process, monkeypatch)
    errors: list[Exception] = []
    try:
        second = [OutRecord(topic, b"second", b'{"from": "second"}')]
        first = handed_over_meanwhile(process, topic, second, errors, then_wait_s=then_wait_s)
        process.commit(first)
        deadline = time.monotonic() + 10
        while transactions.count < transactions_written and time.monotonic() < deadline:
            time.sleep(0.01)
        reader = CommittedReader(cluster.kafka_bootstrap, topic)
        try:
            reader.wait_until(2, timeout_s=30, settle_s=1)
        finally:
            reader.close()
        assert errors == []
        assert transactions.count == transactions_written
        assert sorted(record["from"] for record in reader.records) == ["first", "second"]
    finally:
        process.close()


def test_a_joined_commit_that_fails_fails_the_whole_transaction(
    cluster: ClusterState,
    zk_client: KazooClient,
    topic: str,
    holders_root: ZkPaths,
) -> None:
    """The joining commit's records cannot be made: neither owner's records land, and both
    owners hear of it (each then recovers from its committed progress)."""
    process = process_output(cluster, zk_client, holders_root)
    errors: list[Exception] = []

    def unmakeable() -> Iterator[OutRecord]:
        yield OutRecord(topic, b"second", b'{"from": "second"}')
        raise ValueError("a record that cannot be made")

    try:
        with pytest.raises(OutputError, match="cannot be made"):
            process.commit(handed_over_meanwhile(process, topic, unmakeable(), errors))
        deadline = time.monotonic() + 10
        while not errors and time.monotonic() < deadline:
            time.sleep(0.01)
        assert [str(error) for error in errors] == ["ValueError: a record that cannot be made"]
        reader = CommittedReader(cluster.kafka_bootstrap, topic)
        try:
            reader.poll_for(3)
        finally:
            reader.close()
        assert reader.records == []
        process.commit([OutRecord(topic, b"after", b'{"from": "after"}')])  # still usable
    finally:
        process.close()

"""[Mars]'s accuracy experiment (docs/references.md), automated, under the fault matrix.

2 `mars mapper` + 2 `mars reducer` processes run the reference query over >= 2,000,000 generated
20-field tuples (1 % malformed) on a 4-partition topic, produced at a bounded rate. While data
flows, one after the other: SIGKILL the reducer leader; kill -9 Redis and start it again (AOF);
SIGKILL a reducer follower; kill -9 the Kafka broker and start it again; SIGKILL a mapper; kill
-9 ZooKeeper and start it again; freeze a reducer with SIGSTOP past its ZooKeeper session
timeout (a real zombie, fenced), then SIGCONT it. Killed Mars processes are started again.
Read with isolation.level=read_committed afterwards:

- every (window, sip, type) is emitted exactly once and its count equals the DuckDB oracle;
- counts + late + dead-lettered == records produced (nothing lost silently);
- no record is late: the stream is in order and no outage made a partition look idle
  (docs/protocol.md, "Outages are not idleness");
- Redis is back to its idle size: the task's data sets are gone.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
import redis
from confluent_kafka.admin import AdminClient
from kazoo.client import KazooClient
from kazoo.exceptions import KazooException

from devtools.gen import GeneratorConfig
from devtools.local import ClusterState, LocalCluster
from mars.registry import TaskRegistry
from mars.sql import parse_task
from mars.store import SeqStore, TaskKeys
from mars.tasks.spec import TaskSpec
from tests.integration.pipeline import (
    BackgroundProducer,
    OracleInBackground,
    PipelineProcesses,
    ReducerCluster,
    TopicReader,
    create_task_topics,
    delete_task_topics,
    wait_for,
)
from tests.oracle import ExpectedResults

pytestmark = [pytest.mark.integration, pytest.mark.exclusive]

RECORDS = int(os.environ.get("MARS_TEST_ACCURACY_RECORDS", "2000000"))
# A bounded rate. The stream slows down while each fault recovers (`inject_faults`), so it lasts
# this long plus four fifths of the time the recoveries take.
PRODUCE_S = float(os.environ.get("MARS_TEST_ACCURACY_PRODUCE_S", "90"))
PARTITIONS = 4
# Ten minutes of event time (11 windows of 60 s: the start is not window-aligned), in order.
CONFIG = GeneratorConfig(count=RECORDS, seed=2024, span_s=600, malformed_ratio=0.01)
WINDOW_MS = 60_000
SQL = (
    "SELECT sip, type, timestamp, count(*) FROM {topic} "
    "GROUP BY sip, type, timestamp WINDOWING 60 s"
)
ORACLE_ARGS: dict[str, Any] = {
    "group_by": ["sip", "type"],
    "window_ms": WINDOW_MS,
    "aggregates": {"count_star": "count(*)"},
}
SESSION_TIMEOUT_S = 4
PROCESS_ENV = {
    "MARS_ZOOKEEPER__SESSION_TIMEOUT_S": str(SESSION_TIMEOUT_S),
    "MARS_REDUCER__TRANSACTION_TIMEOUT_MS": "10000",
    "MARS_REDUCER__POLL_INTERVAL_MS": "50",
}
IDLE_TIMEOUT_S = 20
REDIS_MEMORY_SLACK = 8 * 1024 * 1024
ResultKey = tuple[int, str, str]  # (window_start, sip, type)


@dataclass
class FaultLog:
    """When each fault landed: its name and the share of the input produced at that moment."""

    entries: list[tuple[str, float]] = field(default_factory=list)

    def record(self, name: str, producer: BackgroundProducer) -> None:
        self.entries.append((name, producer.produced / RECORDS))


@pytest.mark.timeout(900)
def test_paper_accuracy_experiment_under_faults(
    local_cluster: LocalCluster,
    cluster: ClusterState,
    kafka_admin: AdminClient,
    zk_client: KazooClient,
    zk_root: str,
    redis_client: redis.Redis,
    unique_name: str,
) -> None:
    started = time.monotonic()
    spec = parse_task(
        SQL.format(topic=f"{unique_name}_src"),
        task_id=unique_name,
        # Longer than a client's reconnect back-off after a restart (librdkafka's
        # reconnect.backoff.max.ms is 10 s): the producer's records are not idle, just delayed.
        options={"idle_timeout": f"{IDLE_TIMEOUT_S} s", "buckets": 8},
    )
    create_task_topics(kafka_admin, spec, source_partitions=PARTITIONS)
    store = SeqStore(redis_client)
    memory_before = store.memory_used()
    TaskRegistry(zk_client, root=zk_root).create(spec)
    oracle = OracleInBackground(CONFIG, **ORACLE_ARGS)
    procs = PipelineProcesses(
        cluster=local_cluster,
        name=unique_name,
        env={
            **PROCESS_ENV,
            "MARS_ZOOKEEPER__ROOT": zk_root,
            "MARS_MAPPER__GROUP_ID": f"mappers-{unique_name}",
        },
    )
    reader = TopicReader(
        cluster.kafka_bootstrap, [spec.output_topic, spec.late_topic, spec.dead_letter_topic]
    )
    units = {f"{spec.id}/{bucket}" for bucket in range(spec.options.buckets)}
    try:
        procs.start_many(["reducer", "reducer", "mapper", "mapper"])
        wait_for(
            lambda: ReducerCluster.read(zk_client, root=zk_root).settled(members=2, units=units),
            timeout_s=60,
            what="2 reducers owning every unit",
            logs=procs.logs,
        )
        producer = BackgroundProducer(
            bootstrap=cluster.kafka_bootstrap,
            topic=spec.source_topic,
            config=CONFIG,
            rate=RECORDS / PRODUCE_S,
        )
        producer.start()
        faults = inject_faults(
            local_cluster, procs, producer, reader, zk_client, zk_root, spec, units
        )
        report = producer.join(timeout_s=600)
        assert report.produced == RECORDS

        def accounted() -> bool:
            return Accounting.read(reader, store, spec).total == RECORDS

        wait_for(
            accounted,
            timeout_s=240,
            what="counts + late + bad to reach the records produced",
            logs=procs.logs,
            every=lambda: reader.poll_for(1.0),
        )
        pipeline_s = time.monotonic() - started
        reader.poll_for(3.0)  # a duplicate would show up now
        expected, malformed = oracle.result(timeout_s=600)
        accounting = Accounting.read(reader, store, spec)
        check_results(accounting, expected, malformed=malformed, spec=spec)
        memory_growth = check_redis_back_to_idle(redis_client, spec, memory_before=memory_before)
        print(
            f"\naccuracy under faults: {RECORDS:,} records, {len(accounting.windows)} windows, "
            f"{len(accounting.results):,} groups, {accounting.counted:,} counted, "
            f"{accounting.late:,} late, {accounting.bad:,} bad, Redis used_memory "
            f"{memory_growth / 1e6:+.1f} MB; faults at "
            + ", ".join(f"{name} ({share:.0%})" for name, share in faults.entries)
            + f"; pipeline done after {pipeline_s:.0f} s, all checked after "
            f"{time.monotonic() - started:.0f} s"
        )
    finally:
        procs.stop_all()
        reader.close()
        oracle.close()
        store.delete_task(spec.id)
        delete_task_topics(kafka_admin, spec)


def inject_faults(
    servers: LocalCluster,
    procs: PipelineProcesses,
    producer: BackgroundProducer,
    reader: TopicReader,
    zk: KazooClient,
    root: str,
    spec: TaskSpec,
    units: set[str],
) -> FaultLog:
    """Each fault waits for a share of the input, hits, and waits until the cluster settled.

    The stream slows to a fifth of its rate while a fault recovers: a server that takes a
    minute to restart on a slow machine then uses a few percent of the stream instead of its
    rest, and the faults after it still land mid-stream."""
    faults = FaultLog()

    @contextmanager
    def fault(name: str) -> Iterator[None]:
        faults.record(name, producer)
        with producer.slowed():
            yield

    def view() -> ReducerCluster:
        return ReducerCluster.read(zk, root=root)

    def settled(members: int) -> bool:
        """Settled per ZooKeeper; False while the test's own session is reconnecting."""
        try:
            return view().settled(members=members, units=units)
        except KazooException:
            return False

    def restart_server(role: str) -> None:
        """kill -9 a server, start it again, then wait for the next window's results."""
        windows = len({row["window_start"] for row in reader.values(spec.output_topic)})
        with fault(f"kill -9 and restart {role}"):
            servers.restart(role)
        wait_for(
            lambda: len({r["window_start"] for r in reader.values(spec.output_topic)}) > windows,
            timeout_s=120,
            what=f"results of a new window after the {role} restart",
            logs=procs.logs,
            every=lambda: reader.poll_for(0.5),
        )

    def until_produced(share: float) -> None:
        wait_for(
            lambda: producer.produced >= share * RECORDS or producer.done(),
            timeout_s=300,
            what=f"{share:.0%} of the input produced",
            every=lambda: reader.poll_for(0.5),
        )

    def settled_without(member: str, members: int) -> None:
        wait_for(
            lambda: member not in view().members and view().settled(members=members, units=units),
            timeout_s=60,
            what=f"the reducers to settle without {member}",
            logs=procs.logs,
            every=lambda: reader.poll_for(0.5),
        )

    wait_for(
        lambda: bool(reader.records[spec.output_topic]),
        timeout_s=180,
        what="the first window result",
        logs=procs.logs,
        every=lambda: reader.poll_for(0.5),
    )
    until_produced(0.15)
    leader = view().leader
    assert leader is not None
    with fault("kill -9 reducer leader"):
        procs.kill(procs.by_pid(view().members[leader]))
        procs.start("reducer")
        settled_without(leader, members=2)

    until_produced(0.25)
    restart_server("redis")

    until_produced(0.35)
    current = view()
    follower = next(m for m in current.members if m != current.leader)
    with fault("kill -9 reducer follower"):
        procs.kill(procs.by_pid(current.members[follower]))
        procs.start("reducer")
        settled_without(follower, members=2)

    until_produced(0.45)
    restart_server("kafka")

    until_produced(0.55)
    with fault("kill -9 mapper"):
        procs.kill(procs.alive("mapper")[0])
        procs.start("mapper")

    until_produced(0.62)
    restart_server("zookeeper")
    with producer.slowed():
        wait_for(
            lambda: settled(members=2),
            timeout_s=60,
            what="the reducers to settle after the ZooKeeper restart",
            logs=procs.logs,
            every=lambda: reader.poll_for(0.5),
        )

    until_produced(0.72)
    current = view()
    zombie_id = current.leader
    assert zombie_id is not None
    zombie = procs.by_pid(current.members[zombie_id])
    with fault("SIGSTOP reducer leader past its session"):
        procs.pause(zombie)  # its ZooKeeper session expires while it is frozen
        settled_without(zombie_id, members=1)
        reader.poll_for(2.0)  # the survivor owns and commits the zombie's units meanwhile
        procs.resume(zombie)
        wait_for(
            lambda: settled(members=2),
            timeout_s=60,
            what="the former zombie to rejoin",
            logs=procs.logs,
            every=lambda: reader.poll_for(0.5),
        )
    # Each fault landed while the stream flowed (the share produced when it was recorded);
    # the stream may end while the former zombie rejoins, which is no fault of the test's.
    assert all(share < 1.0 for _, share in faults.entries), f"not mid-stream: {faults.entries}"
    return faults


@dataclass(frozen=True, slots=True, kw_only=True)
class Accounting:
    """What the committed topics and the counters say about every input record."""

    results: dict[ResultKey, int]
    emitted: Counter[ResultKey]
    windows: set[int]
    counted: int
    late_from_mapper: dict[str, bytes]  # source label -> original record
    late_from_reducer: list[dict[str, Any]]
    dead_letters: set[str]  # source labels
    stats: dict[str, int]

    @classmethod
    def read(cls, reader: TopicReader, store: SeqStore, spec: TaskSpec) -> Accounting:
        results: dict[ResultKey, int] = {}
        emitted: Counter[ResultKey] = Counter()
        for row in reader.values(spec.output_topic):
            key = (row["window_start"], row["sip"], row["type"])
            emitted[key] += 1
            results[key] = row["count_star"]
            assert row["timestamp"] == row["window_start"], row
        late_from_mapper: dict[str, bytes] = {}
        late_from_reducer: list[dict[str, Any]] = []
        for late_key, late_value in reader.records[spec.late_topic]:
            assert late_key is not None and late_value is not None
            if late_key.startswith(b"["):  # the reducer's JSON key [task, window, group]
                late_from_reducer.append(json.loads(late_value))
            else:  # the mapper's original bytes, keyed topic/partition/offset
                late_from_mapper[late_key.decode()] = late_value
        return cls(
            results=results,
            emitted=emitted,
            windows={key[0] for key in results},
            counted=sum(results.values()),
            late_from_mapper=late_from_mapper,
            late_from_reducer=late_from_reducer,
            dead_letters={key.decode() for key, _ in reader.records[spec.dead_letter_topic] if key},
            stats=store.counters.read(spec.id),
        )

    @property
    def late(self) -> int:
        return len(self.late_from_mapper) + sum(r["records"] for r in self.late_from_reducer)

    @property
    def bad(self) -> int:
        return self.stats.get("bad", 0)

    @property
    def total(self) -> int:
        return self.counted + self.late + self.bad


def expected_minus_late(expected: ExpectedResults, accounting: Accounting) -> dict[ResultKey, int]:
    """The oracle's counts less the records the pipeline reported late (explicitly)."""
    counts: Counter[ResultKey] = Counter(
        {key: values["count_star"] for key, values in expected.items()}
    )
    for raw in accounting.late_from_mapper.values():
        record = json.loads(raw)
        start = int(record["timestamp"] * 1000) // WINDOW_MS * WINDOW_MS
        counts[(start, record["sip"], record["type"])] -= 1
    for late in accounting.late_from_reducer:
        group = late["group"]
        counts[(late["window_start"], group["sip"], group["type"])] -= late["records"]
    return {key: count for key, count in counts.items() if count != 0}


def check_results(
    accounting: Accounting, expected: ExpectedResults, *, malformed: int, spec: TaskSpec
) -> None:
    stats = accounting.stats
    duplicates = {key: n for key, n in accounting.emitted.items() if n > 1}
    assert not duplicates, (
        f"{len(duplicates)} groups emitted more than once: {list(duplicates.items())[:5]}"
    )
    assert stats["records_in"] == RECORDS
    # Nothing lost silently: every record is counted, late or dead-lettered, exactly once.
    assert accounting.counted + accounting.late + accounting.bad == RECORDS
    assert accounting.late == stats.get("late", 0) + stats.get("late_reducer", 0)
    # In-order input, nothing idle before its end: a late record means an outage or a kill was
    # taken for idleness (the watermark skipped a partition whose records were waiting).
    assert accounting.late == 0, f"{accounting.late} late records: {stats}"
    assert accounting.bad == malformed == expected.skipped
    assert accounting.dead_letters and len(accounting.dead_letters) == accounting.bad
    # Every value equals the oracle's (less the late records, listed on the late topic).
    wanted = expected_minus_late(expected, accounting)
    missing = wanted.keys() - accounting.results.keys()
    extra = accounting.results.keys() - wanted.keys()
    wrong = {
        key: (accounting.results[key], wanted[key])
        for key in wanted.keys() & accounting.results.keys()
        if accounting.results[key] != wanted[key]
    }
    assert not (missing or extra or wrong), (
        f"{len(missing)} groups missing (e.g. {sorted(missing)[:3]}), {len(extra)} extra "
        f"(e.g. {sorted(extra)[:3]}), {len(wrong)} wrong (got, want: {list(wrong.items())[:3]})"
    )
    first, last = CONFIG.start_ms // WINDOW_MS, (CONFIG.end_ms - 1) // WINDOW_MS
    assert accounting.windows == {w * WINDOW_MS for w in range(first, last + 1)}


def check_redis_back_to_idle(client: redis.Redis, spec: TaskSpec, *, memory_before: int) -> int:
    """All windows emitted: the task's data sets are released and memory is back near idle."""
    keys = TaskKeys(spec.id)
    pattern = keys.prefix + "b:*:d"

    def no_datasets() -> bool:
        return next(iter(client.scan_iter(match=pattern, count=1000)), None) is None

    wait_for(no_datasets, timeout_s=30, what=f"no {pattern} keys left in Redis")
    used = int(client.info("memory")["used_memory"])
    assert used - memory_before < REDIS_MEMORY_SLACK, (
        f"Redis used_memory {used:,} B vs {memory_before:,} B before the run"
    )
    return used - memory_before

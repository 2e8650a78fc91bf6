"""The whole pipeline as real processes, for end-to-end tests: `mars mapper` and `mars reducer`
subprocesses on the session's local cluster, a paced producer thread, committed readers of the
task's topics, and the DuckDB oracle computed in a separate process.

Every pipeline isolates itself by a ZooKeeper root and a mapper consumer group of its own, so it
never sees another test's tasks.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import signal
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from devtools.gen import GeneratorConfig, generate
from devtools.gen.pacing import RatePacer
from devtools.gen.partitioning import PartitionStrategy
from devtools.gen.produce import ProduceReport, produce
from devtools.local import LocalCluster
from devtools.local.process_handle import ProcessHandle, log_tail
from devtools.local.roles import start_role
from mars.clients.kafka_config import IDEMPOTENT_PRODUCER
from mars.config import KafkaSettings
from mars.registry.cluster_view import cluster_view
from mars.tasks.spec import TaskSpec
from mars.tasks.topics import topic_partitions
from tests.oracle import ExpectedResults, expected_results


def wait_for(
    condition: Callable[[], bool],
    *,
    timeout_s: float,
    what: str | Callable[[], str],
    logs: Callable[[], str] = lambda: "",
    every: Callable[[], None] | None = None,
) -> float:
    """Poll `condition` (calling `every` between polls); return the seconds it took. `what`
    may be a callable, to describe the state at the timeout."""
    started = time.monotonic()
    while True:
        if condition():
            return time.monotonic() - started
        if time.monotonic() - started > timeout_s:
            waited_for = what() if callable(what) else what
            raise AssertionError(
                f"timed out after {timeout_s:.0f} s waiting for {waited_for}\n{logs()}"
            )
        if every is not None:
            every()
        else:
            time.sleep(0.25)


@dataclass
class PipelineProcesses:
    """Mapper and reducer subprocesses of one pipeline, started with `start_role`.

    `env` is added to the cluster's variables (ZooKeeper root, consumer group, timeouts).
    Processes are addressed by the name given at start; `stop_all` ends every one of them.
    """

    cluster: LocalCluster
    name: str
    env: Mapping[str, str]
    handles: dict[str, ProcessHandle] = field(default_factory=dict)
    paused: set[str] = field(default_factory=set)

    def start(
        self, role: str, *, group: str | None = None, env: Mapping[str, str] | None = None
    ) -> str:
        return self.start_many([role], group=group, env=env)[0]

    def start_many(
        self, roles: list[str], *, group: str | None = None, env: Mapping[str, str] | None = None
    ) -> list[str]:
        """Start processes of `roles` side by side (each one's start is mostly its imports),
        named `<pipeline>-<role>-<n>` in the order given; return once all of them serve.
        `env` is added to the pipeline's for these processes only."""
        names: list[str] = []
        for role in roles:
            taken = [*self.handles, *names]
            index = sum(1 for name in taken if name.startswith(f"{self.name}-{role}-"))
            names.append(f"{self.name}-{role}-{index}")
        if not roles:
            return []
        with ThreadPoolExecutor(max_workers=len(roles)) as pool:
            started = [
                pool.submit(
                    start_role,
                    self.cluster,
                    role,
                    name=name,
                    extra_env={**self.env, **(env or {})},
                    group=group,
                )
                for role, name in zip(roles, names, strict=True)
            ]
            failed: BaseException | None = None
            for name, future in zip(names, started, strict=True):
                try:  # keep every one that started, so that `stop_all` stops it
                    self.handles[name] = future.result()
                except BaseException as exc:
                    failed = failed or exc
        if failed is not None:
            raise failed
        return names

    def alive(self, role: str) -> list[str]:
        return [
            name
            for name, handle in self.handles.items()
            if f"-{role}-" in name and handle.is_running()
        ]

    def by_pid(self, pid: int) -> str:
        for name, handle in self.handles.items():
            if handle.pid == pid and handle.is_running():
                return name
        raise AssertionError(f"no running process of {self.name} has pid {pid}")

    def kill(self, name: str) -> None:
        """SIGKILL, as a crash."""
        self.handles[name].kill()

    def pause(self, name: str) -> None:
        """SIGSTOP: the process freezes with its sessions open (a zombie once they expire)."""
        os.kill(self.handles[name].pid, signal.SIGSTOP)
        self.paused.add(name)

    def resume(self, name: str) -> None:
        os.kill(self.handles[name].pid, signal.SIGCONT)
        self.paused.discard(name)

    def stop_all(self) -> None:
        """SIGTERM to every process at once, then wait for each (SIGKILL after 20 s): none
        waits for another, and a reducer does not take over units of one stopping beside it."""
        for name in list(self.paused):
            with contextlib.suppress(ProcessLookupError):
                self.resume(name)
        handles = list(self.handles.values())
        if handles:
            with ThreadPoolExecutor(max_workers=len(handles)) as pool:
                for stopped in [pool.submit(h.stop, timeout_s=20) for h in handles]:
                    stopped.result()

    def logs(self, lines: int = 30) -> str:
        return "\n".join(
            f"--- {name}\n{log_tail(handle.log, lines)}" for name, handle in self.handles.items()
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ReducerCluster:
    """What ZooKeeper says about the reducers under one root."""

    leader: str | None
    members: Mapping[str, int]  # member id -> pid
    owners: Mapping[str, str]  # unit key -> member id

    @classmethod
    def read(cls, zk: KazooClient, *, root: str) -> ReducerCluster:
        view = cluster_view(zk, root=root)
        assignment = view["assignment"] or {}
        return cls(
            leader=view["leader"],
            members={member: int(info["pid"]) for member, info in view["members"].items()},
            owners=dict(assignment.get("units", {})),
        )

    def settled(self, *, members: int, units: set[str]) -> bool:
        """`members` reducers, a leader, and every unit assigned to a live member."""
        return (
            len(self.members) == members
            and self.leader in self.members
            and units <= set(self.owners)
            and all(self.owners[unit] in self.members for unit in units)
        )


@dataclass
class TopicReader:
    """Reads topics from the beginning with isolation.level=read_committed."""

    bootstrap: str
    topics: list[str]
    client_properties: Mapping[str, str] = field(default_factory=dict)
    records: dict[str, list[tuple[bytes | None, bytes | None]]] = field(default_factory=dict)
    _parsed: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._consumer = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                **self.client_properties,
                "group.id": f"accuracy-reader-{uuid.uuid4().hex}",
                "isolation.level": "read_committed",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
            }
        )
        # Assigned, not subscribed: a group rebalance (a topic appearing late in the metadata)
        # would re-read from the beginning and look like duplicates.
        self._consumer.assign(
            [
                TopicPartition(topic, partition, OFFSET_BEGINNING)
                for topic in self.topics
                for partition in topic_partitions(self._consumer, topic)
            ]
        )
        self.records = {topic: [] for topic in self.topics}

    def poll_for(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            for message in self._consumer.consume(10_000, timeout=0.2):
                error = message.error()
                if error is not None:
                    if error.code() in (
                        KafkaError._PARTITION_EOF,
                        KafkaError.UNKNOWN_TOPIC_OR_PART,
                    ):
                        continue
                    raise AssertionError(f"reading {message.topic()}: {error}")
                topic = message.topic()
                assert topic is not None
                self.records[topic].append((message.key(), message.value()))

    def values(self, topic: str) -> list[dict[str, Any]]:
        """The topic's JSON values so far (parsed once: callers poll this while reading)."""
        parsed = self._parsed.setdefault(topic, [])
        parsed.extend(
            json.loads(value or b"null") for _key, value in self.records[topic][len(parsed) :]
        )
        return parsed

    def positions(self) -> str:
        """Each partition's read position beside its high watermark: a position held below
        it by an open transaction (the last stable offset) shows here."""
        lines = []
        for tp in self._consumer.position(self._consumer.assignment()):
            _low, high = self._consumer.get_watermark_offsets(tp, timeout=5, cached=False)
            lines.append(f"{tp.topic}/{tp.partition}: read to {tp.offset}, high watermark {high}")
        return "; ".join(lines)

    def close(self) -> None:
        self._consumer.close()


class BackgroundProducer:
    """`devtools.gen.produce` of one generated stream on a thread, at a bounded rate
    (`client_properties`: the brokers' `kafka.client_properties`, e.g. SASL); `slowed` turns
    the rate down while a fault recovers."""

    def __init__(
        self,
        *,
        bootstrap: str,
        topic: str,
        config: GeneratorConfig,
        rate: float,
        client_properties: Mapping[str, str] | None = None,
    ) -> None:
        self.produced = 0
        self.report: ProduceReport | None = None
        self.error: BaseException | None = None
        kafka = KafkaSettings(
            bootstrap_servers=bootstrap, client_properties=dict(client_properties or {})
        )
        self._args = (kafka, topic, config)
        self._rate = rate
        self._pacer = RatePacer(rate=rate)
        self._thread = threading.Thread(target=self._run, name="producer", daemon=True)
        self._stop = threading.Event()

    def start(self) -> None:
        self._thread.start()

    def done(self) -> bool:
        return not self._thread.is_alive()

    def stop(self, timeout_s: float = 30.0) -> None:
        """End the stream early (at the next progress report) and wait for the thread."""
        self._stop.set()
        self._thread.join(timeout_s)

    @contextlib.contextmanager
    def slowed(self, fraction: float = 0.2) -> Iterator[None]:
        """`fraction` of the rate while inside: a recovery that takes long on a slow machine
        then uses a small share of the stream, so the faults after it still land mid-stream.
        The rate comes back without a burst to catch up (`RatePacer.retime`)."""
        self._pacer.retime(self._rate * fraction, sent=self.produced)
        try:
            yield
        finally:
            self._pacer.retime(self._rate, sent=self.produced)

    def join(self, timeout_s: float) -> ProduceReport:
        self._thread.join(timeout_s)
        if self.error is not None:
            raise self.error
        assert self.report is not None, "the producer did not finish in time"
        return self.report

    def _run(self) -> None:
        kafka, topic, config = self._args

        def progress(done: int, _total: int) -> None:
            self.produced = done
            if self._stop.is_set():
                raise _ProducerStopped

        try:
            self.report = produce(
                kafka,
                topic,
                config,
                pacer=self._pacer,
                strategy=PartitionStrategy.ROUND_ROBIN,
                chunk_size=16_384,
                on_progress=progress,
            )
        except _ProducerStopped:
            pass
        except BaseException as error:  # surfaced by join
            self.error = error


class _ProducerStopped(Exception):
    """Raised inside `produce`'s progress callback to end a stream early."""


def _oracle_job(
    config: GeneratorConfig, oracle_args: Mapping[str, Any]
) -> tuple[ExpectedResults, int]:
    batch = generate(config)
    return expected_results(batch.values, **oracle_args), len(batch.malformed)


class OracleInBackground:
    """The DuckDB oracle over a generated stream, computed in a spawned process meanwhile.

    `result()` -> (expected results, number of generated malformed records).
    """

    def __init__(self, config: GeneratorConfig, **oracle_args: Any) -> None:
        self._pool = multiprocessing.get_context("spawn").Pool(1)
        self._result = self._pool.apply_async(_oracle_job, (config, oracle_args))

    def result(self, timeout_s: float) -> tuple[ExpectedResults, int]:
        return self._result.get(timeout=timeout_s)

    def close(self) -> None:
        self._pool.terminate()
        self._pool.join()


def produce_in_order(bootstrap: str, topic: str, records: Iterable[tuple[int, bytes]]) -> None:
    """Produce `(partition, value)` records, each partition's in the given order (idempotent
    producer: a retry cannot reorder or repeat them)."""
    producer = Producer({"bootstrap.servers": bootstrap, **IDEMPOTENT_PRODUCER})
    for partition, value in records:
        producer.produce(topic, value, partition=partition)
    assert producer.flush(30) == 0, "records left unsent"


def create_task_topics(
    admin: AdminClient, spec: TaskSpec, *, source_partitions: int | None
) -> None:
    """The source (unless None: another task's) and the task's topics. The output topic is
    deliberately NOT compacted here: compaction could hide a duplicate result from an
    exactly-once check."""
    topics = [
        *(
            [NewTopic(spec.source_topic, num_partitions=source_partitions, replication_factor=1)]
            if source_partitions is not None
            else []
        ),
        NewTopic(spec.output_topic, num_partitions=4, replication_factor=1),
        NewTopic(spec.late_topic, num_partitions=1, replication_factor=1),
        NewTopic(spec.dead_letter_topic, num_partitions=1, replication_factor=1),
    ]
    for future in admin.create_topics(topics).values():
        future.result(timeout=30)


def delete_task_topics(admin: AdminClient, spec: TaskSpec) -> None:
    names = [spec.source_topic, spec.output_topic, spec.late_topic, spec.dead_letter_topic]
    for future in admin.delete_topics(names).values():
        with contextlib.suppress(Exception):  # cleanup only; a missing topic is fine
            future.result(timeout=30)


# How far past a stream's end `close_every_window` puts its closing records.
CLOSING_DELAY_S = 7_200


def check_exact(
    rows: list[dict[str, Any]],
    expected: ExpectedResults,
    group_by: tuple[str, ...],
    aggregates: tuple[str, ...],
) -> None:
    """Each (window, group) once, with the oracle's values, and nothing else.

    The window of `close_every_window`'s closing records is not the stream's: once the
    partitions fall idle, idle close emits it too (on a slow machine, before the check)."""
    if expected:
        closing_ms = max(key[0] for key in expected) + CLOSING_DELAY_S * 1000 // 2
        rows = [row for row in rows if row["window_start"] < closing_ms]
    emitted = Counter((row["window_start"], *(row[g] for g in group_by)) for row in rows)
    duplicates = [key for key, n in emitted.items() if n > 1]
    assert not duplicates, f"emitted more than once: {duplicates[:5]}"
    got = {
        (row["window_start"], *(row[g] for g in group_by)): {a: row[a] for a in aggregates}
        for row in rows
    }
    want = dict(expected)
    if got != want:
        missing = sorted(want.keys() - got.keys())
        extra = sorted(got.keys() - want.keys())
        differ = sorted(k for k in want.keys() & got.keys() if want[k] != got[k])
        raise AssertionError(
            f"{len(missing)} (window, group) missing, e.g. {missing[:3]}; {len(extra)} not "
            f"expected, e.g. {extra[:3]}; {len(differ)} differ, e.g. "
            + ", ".join(f"{k}: {got[k]} != {want[k]}" for k in differ[:3])
        )


@dataclass(frozen=True, slots=True)
class ExpectedTopic:
    """What a task's result topic must hold: the oracle's rows, keyed by `group_by`."""

    topic: str
    results: ExpectedResults
    group_by: tuple[str, ...]
    aggregates: tuple[str, ...]


def wait_exact(
    bootstrap: str,
    expected: list[ExpectedTopic],
    *,
    logs: Callable[[], str],
    timeout_s: float = 120,
) -> float:
    """Read the result topics until each holds as many rows as expected; then each must
    hold exactly the expected rows, each (window, group) once (`check_exact`). Returns the
    seconds the rows took to come."""
    reader = TopicReader(bootstrap, [e.topic for e in expected])

    def shortfall() -> str:
        """What is missing per topic and window, the reader's positions, then `logs`."""
        lines = []
        for e in expected:
            got = Counter(row["window_start"] for row in reader.values(e.topic))
            want = Counter(key[0] for key in e.results)
            short = {w: want[w] - got[w] for w in sorted(want) if got[w] < want[w]}
            lines.append(
                f"{e.topic}: {len(reader.values(e.topic))} of {len(e.results)} rows; "
                f"(window start: rows missing) {short}"
            )
        return "\n".join([*lines, reader.positions(), logs()])

    try:
        waited = wait_for(
            lambda: all(len(reader.values(e.topic)) >= len(e.results) for e in expected),
            timeout_s=timeout_s,
            what="every task's results",
            logs=shortfall,
            every=lambda: reader.poll_for(0.5),
        )
        reader.poll_for(2.0)  # anything beyond the expected rows shows now
        for e in expected:
            check_exact(reader.values(e.topic), e.results, e.group_by, e.aggregates)
    finally:
        reader.close()
    return waited

"""Helpers of the Spark tests: a live-like mapper, reading Redis back, topics, the oracle over
history and live streams, `mars spark stream` started as a process."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import redis
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from devtools.gen import GeneratorConfig
from devtools.gen.tuples import iter_chunks
from mars.config import Settings
from mars.engine.dataset import OpenWindows, decode_dataset, merge_into
from mars.engine.finalize import finalize_window
from mars.engine.preaggregate import Preaggregator
from mars.engine.records import SourceRecord
from mars.store import SeqStore, SourceState, TaskKeys
from mars.tasks.spec import TaskSpec
from tests.integration.watched import WatchedPipeline
from tests.oracle import SIP_TYPE_COUNT_SUM, ExpectedResults, expected_results

HISTORY_START_S = 1_700_000_000
HISTORY_SPAN_S = 4 * 3600

# The backfill tests' task and the oracle arguments that compute the same results.
BACKFILL_SQL = (
    "SELECT sip, type, count(*) AS cnt, sum(bytes) AS total FROM {topic} "
    "GROUP BY sip, type WINDOWING 60 s GRACE 10 s"
)
BACKFILL_ORACLE = SIP_TYPE_COUNT_SUM  # grace does not change final results


def history_and_live(
    *, history: int, live: int, seeds: tuple[int, int]
) -> tuple[GeneratorConfig, GeneratorConfig]:
    """A backfill's history (4 h) and the live stream that follows it (10 min), both with
    5 s disorder and 100 sip values (keeps the output small; emission is not under test)."""
    common: dict[str, Any] = {"disorder_s": 5, "sip_cardinality": 100}
    return (
        GeneratorConfig(
            count=history,
            seed=seeds[0],
            start_s=HISTORY_START_S,
            span_s=HISTORY_SPAN_S,
            **common,
        ),
        GeneratorConfig(
            count=live,
            seed=seeds[1],
            start_s=HISTORY_START_S + HISTORY_SPAN_S,
            span_s=600,
            **common,
        ),
    )


def create_topic(admin: AdminClient, name: str, *, partitions: int) -> None:
    futures = admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1)])
    for future in futures.values():
        future.result(timeout=30)


def read_partitions(
    bootstrap: str, topic: str, ends: Mapping[int, int], *, starts: Mapping[int, int] | None = None
) -> dict[int, list[tuple[int, bytes]]]:
    """(offset, value) of each partition from `starts` (default 0) up to `ends`, in order."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "spark-test-reader",
            "enable.auto.commit": False,
        }
    )
    starts = starts or {}
    out: dict[int, list[tuple[int, bytes]]] = {p: [] for p in ends}
    pending = {p for p, end in ends.items() if end > starts.get(p, 0)}
    consumer.assign([TopicPartition(topic, p, starts.get(p, 0)) for p in pending])
    deadline = time.monotonic() + 120
    while pending and time.monotonic() < deadline:
        for message in consumer.consume(10_000, timeout=1.0):
            if message.error() is not None:
                continue
            partition, offset = message.partition(), message.offset()
            if partition is None or offset is None:
                continue
            if partition in pending and offset < ends[partition]:
                out[partition].append((offset, message.value() or b""))
                if offset == ends[partition] - 1:
                    pending.discard(partition)
    consumer.close()
    assert not pending, f"partitions {pending} not read to the end"
    return out


class LiveLikeMapper:
    """What a live mapper does with its partitions, reduced to the SEQ protocol's writer loop:
    start at `applied_offset + 1` from Redis, pre-aggregate batches with the shared engine and
    apply them under the integer source ids. Used when no mapper process is at hand."""

    def __init__(self, spec: TaskSpec, store: SeqStore, *, bootstrap: str, batch: int) -> None:
        self._spec = spec
        self._store = store
        self._bootstrap = bootstrap
        self._batch = batch
        self._pre = Preaggregator.for_spec(spec)

    def run_until(self, ends: Mapping[int, int]) -> int:
        """Consume every partition up to `ends[p]` (exclusive); returns records applied."""
        states = self._store.read_sources(self._spec.id)
        starts = {p: states.get(p, SourceState()).applied_offset + 1 for p in ends}
        records = read_partitions(self._bootstrap, self._spec.source_topic, ends, starts=starts)
        applied = 0
        for partition, items in records.items():
            for lo in range(0, len(items), self._batch):
                batch = [
                    SourceRecord(partition=partition, offset=o, value=v)
                    for o, v in items[lo : lo + self._batch]
                ]
                state = self._store.read_sources(self._spec.id).get(partition, SourceState())
                partials = self._pre.run(batch, {partition: state.stream_time_ms}, now_ms=0)
                result = self._store.apply_batch(
                    self._spec.id,
                    expected={partition: state.applied_offset},
                    sources={
                        partition: SourceState(
                            applied_offset=partials.last_offsets[partition],
                            stream_time_ms=partials.stream_times.get(partition),
                        )
                    },
                    datasets=partials.datasets,
                    counters={
                        "records_in": partials.records_in,
                        "accepted": partials.accepted,
                        "filtered": partials.filtered,
                        "bad": len(partials.bad),
                        "late": len(partials.late),
                    },
                    now_ms=int(time.time() * 1000),
                )
                assert result.applied, result
                applied += len(batch)
        return applied


def merged_windows(store: SeqStore, client: redis.Redis, spec: TaskSpec) -> OpenWindows:
    """Every data set of every bucket, decoded and merged."""
    keys = TaskKeys(spec.id)
    windows: OpenWindows = {}
    for bucket in range(spec.options.buckets):
        seq = int(client.get(keys.seq(bucket)) or 0)
        if seq:
            for _, data in store.read_datasets(spec.id, bucket, 1, seq):
                merge_into(windows, decode_dataset(data))
    return windows


def final_results(spec: TaskSpec, windows: OpenWindows) -> dict[tuple[Any, ...], dict[str, Any]]:
    """(window_start, *group values) -> output columns other than the group keys."""
    names = [g.name for g in spec.group_keys]
    out: dict[tuple[Any, ...], dict[str, Any]] = {}
    for start, groups in windows.items():
        for row in finalize_window(spec, start, groups):
            key = (start, *(row[n] for n in names))
            out[key] = {o.name: row[o.name] for o in spec.outputs if o.name not in names}
    return out


def task_state(client: redis.Redis, task: str) -> dict[bytes, Any]:
    """Every key of the task with its value (by type), to compare Redis before and after."""
    state: dict[bytes, Any] = {}
    for key in sorted(client.scan_iter(match=TaskKeys(task).scan_pattern, count=1000)):
        kind = client.type(key)
        if kind == b"string":
            state[key] = client.get(key)
        elif kind == b"hash":
            state[key] = client.hgetall(key)
        elif kind == b"list":
            state[key] = client.lrange(key, 0, -1)
        else:
            state[key] = kind
    return state


def values_of(records: Iterable[tuple[int, bytes]]) -> list[bytes]:
    return [value for _, value in records]


def stream_values(configs: Sequence[GeneratorConfig]) -> list[bytes]:
    """The records of the generated streams `configs`, in order, as produced."""
    return [v for config in configs for chunk in iter_chunks(config) for v in chunk.values]


def _oracle_job(configs: Sequence[GeneratorConfig], oracle_args: Mapping[str, Any]) -> Any:
    return expected_results(stream_values(configs), **oracle_args)


class StreamsOracle:
    """The DuckDB oracle over several generated streams together (history + live), computed in
    a spawned process while the pipeline runs."""

    def __init__(self, configs: Sequence[GeneratorConfig], **oracle_args: Any) -> None:
        self._pool = multiprocessing.get_context("spawn").Pool(1)
        self._result = self._pool.apply_async(_oracle_job, (list(configs), oracle_args))

    def result(self, timeout_s: float) -> ExpectedResults:
        result: ExpectedResults = self._result.get(timeout=timeout_s)
        return result

    def close(self) -> None:
        self._pool.terminate()
        self._pool.join()


def start_stream(
    master: str, task: str, pipeline: WatchedPipeline, settings: Settings, *, log: Path
) -> subprocess.Popen[bytes]:
    """`mars spark stream <task>` on `master` (1 s triggers), its output in `log`."""
    env = {
        **os.environ,
        **pipeline.procs.env,
        **pipeline.cluster.state.env(),  # type: ignore[union-attr]
        "MARS_LOCAL__JARS_DIR": str(settings.local.jars_dir),
    }
    command = [sys.executable, "-m", "cli.main", "spark", "stream", task]
    command += ["--master", master, "--trigger", "1", "--conf", "spark.executor.memory=512m"]
    with log.open("wb") as out:
        return subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)

"""Reducer processes on the real cluster: exactly-once results, kill -9, zombie, GC."""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from kazoo.client import KazooClient

from devtools.local import ClusterState
from mars.registry import TaskRegistry
from mars.sql import parse_task
from mars.store import SeqStore, TaskKeys
from mars.tasks.spec import TaskSpec
from tests.integration.reducer.cluster_harness import (
    CommittedReader,
    Heartbeats,
    ReducerProcs,
    WallClock,
    wait_owned,
)
from tests.integration.reducer.harness import ScriptedMapper

WINDOW_MS = 100
RESULT_TIMEOUT_S = 90


@pytest.fixture
def reducers(cluster: ClusterState, zk_root: str, tmp_path: Path) -> Iterator[ReducerProcs]:
    procs = ReducerProcs(cluster=cluster, zk_root=zk_root, log_dir=tmp_path)
    yield procs
    procs.stop_all()
    print(procs.logs())


def register(zk_client: KazooClient, zk_root: str, task_id: str, extra: str = "") -> TaskSpec:
    spec = parse_task(
        f"SELECT k, COUNT(*) AS c FROM S GROUP BY k WINDOWING {WINDOW_MS} ms {extra} "
        "WITH (event_time='t', event_time_format='epoch_ms', buckets=4, idle_timeout='2 s')",
        task_id=task_id,
    )
    TaskRegistry(zk_client, root=zk_root).create(spec)
    return spec


def write_rounds(
    mapper: ScriptedMapper,
    lock: threading.Lock,
    rng: random.Random,
    *,
    rounds: int,
    per_round: int,
    pause_s: float,
    start_t: int,
) -> Counter[tuple[int, str]]:
    """Monotone event times over two partitions; returns expected count per (window, key)."""
    expected: Counter[tuple[int, str]] = Counter()
    t = start_t
    for _ in range(rounds):
        for partition in (0, 1):
            rows: list[dict[str, Any]] = []
            for _ in range(per_round):
                t += rng.randint(0, 2)
                rows.append({"k": f"k{rng.randint(0, 9)}", "t": t})
            with lock:
                mapper.send(partition, rows)
            for row in rows:
                expected[(row["t"] // WINDOW_MS * WINDOW_MS, row["k"])] += 1
        time.sleep(pause_s)
    assert mapper.late == 0
    return expected


def check_exactly_once(reader: CommittedReader, expected: Counter[tuple[int, str]]) -> None:
    seen: Counter[tuple[int, str]] = Counter()
    values: dict[tuple[int, str], int] = {}
    for row in reader.records:
        seen[(row["window_start"], row["k"])] += 1
        values[(row["window_start"], row["k"])] = row["c"]
    duplicates = {key: n for key, n in seen.items() if n > 1}
    assert not duplicates, f"emitted more than once: {list(duplicates.items())[:5]}"
    assert values == dict(expected)


@pytest.mark.timeout(300)
def test_two_reducers_kill_9_and_restart_exactly_once(
    cluster: ClusterState,
    zk_client: KazooClient,
    zk_root: str,
    reducers: ReducerProcs,
    redis_client: redis.Redis,
    unique_name: str,
) -> None:
    store = SeqStore(redis_client)
    spec = register(zk_client, zk_root, unique_name)
    lock = threading.Lock()
    mapper = ScriptedMapper(spec, store, WallClock(), partitions=2)  # type: ignore[arg-type]
    rng = random.Random(11)
    reader = CommittedReader(cluster.kafka_bootstrap, spec.output_topic)
    reducers.start("ra")
    reducers.start("rb")
    units = {f"{spec.id}/{b}" for b in range(spec.options.buckets)}
    try:
        wait_owned(redis_client, ["ra", "rb"], units)
        with Heartbeats(mapper, lock) as beats:
            expected = write_rounds(
                mapper, lock, rng, rounds=20, per_round=60, pause_s=0.15, start_t=0
            )
            emitted_by = time.monotonic() + 8  # the first committed window, not 8 s flat
            while not reader.records and time.monotonic() < emitted_by:
                reader.poll_for(0.5)
            assert reader.records, "no window emitted before the kill"
            reducers.kill("ra")  # whatever it owned moves to rb (after ra's session expires)
            expected += write_rounds(
                mapper, lock, rng, rounds=20, per_round=60, pause_s=0.15, start_t=mapper_t(mapper)
            )
            reducers.start("ra2")
            reducers.kill("rb")
            expected += write_rounds(
                mapper, lock, rng, rounds=10, per_round=60, pause_s=0.15, start_t=mapper_t(mapper)
            )
            beats.caught_up = True  # input stops: idle close emits the last windows
            reader.wait_until(len(expected), timeout_s=RESULT_TIMEOUT_S)
        check_exactly_once(reader, expected)
        assert_garbage_collected(redis_client, spec)
    finally:
        reader.close()
        store.delete_task(spec.id)


def mapper_t(mapper: ScriptedMapper) -> int:
    return max(t for t in mapper.stream_times.values() if t is not None)


def assert_garbage_collected(client: redis.Redis, spec: TaskSpec) -> None:
    keys = TaskKeys(spec.id)
    deadline = time.monotonic() + 20
    left: list[bytes] = []
    while time.monotonic() < deadline:
        left = [k for b in range(spec.options.buckets) if client.exists(k := keys.datasets(b))]
        if not left:
            return
        time.sleep(0.5)
    raise AssertionError(f"data sets left in Redis: {left[:5]}")

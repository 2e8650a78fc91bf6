"""kill -9 of a unit's owner mid-window, after several checkpoints, on the real cluster.

Two `mars reducer` processes, one 1-hour window fed for a while by a scripted mapper (real
Redis script). Once every unit has committed several checkpoints and released the data sets
they cover, and unit 0's committed checkpoint is a chain (a full checkpoint and deltas of the
groups changed since: docs/reducer.md, "Incremental checkpoints"), the owner of unit 0 is
killed with SIGKILL. Those data sets are gone from Redis, so the next owner can only get their
contributions from the committed chain: the final results, read with read_committed, are exact
and each (window, key) appears once. Once with the open windows as Python objects, once in
columns (`reducer.columnar_state`: the deltas are Arrow frames of the changed rows).
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from kazoo.client import KazooClient

from devtools.local import ClusterState
from mars.engine.columnar_checkpoint import is_columnar
from mars.registry import TaskRegistry
from mars.sql import parse_task
from mars.store import SeqStore, TaskKeys
from mars.store.reducer_stats import chain_fields
from mars.tasks.spec import TaskSpec
from tests.integration.reducer.cluster_harness import (
    CommittedReader,
    Heartbeats,
    ReducerProcs,
    WallClock,
    owners_of,
    wait_owned,
)
from tests.integration.reducer.harness import ScriptedMapper

HOUR_MS = 3_600_000
BUCKETS = 2
CHECKPOINTS_BEFORE_KILL = 4  # committed checkpoints per unit before the owner dies
Expected = Counter[tuple[int, str]]  # (window start, key) -> count


@pytest.fixture(params=["python", "columnar"])
def reducers(
    request: pytest.FixtureRequest, cluster: ClusterState, zk_root: str, tmp_path: Path
) -> Iterator[ReducerProcs]:
    procs = ReducerProcs(
        cluster=cluster,
        zk_root=zk_root,
        log_dir=tmp_path,
        extra_env={
            "MARS_REDUCER__CHECKPOINT_INTERVAL_MS": "500",
            "MARS_REDUCER__COLUMNAR_STATE": str(request.param == "columnar").lower(),
        },
    )
    yield procs
    procs.stop_all()
    print(procs.logs())


def hour_task(zk_client: KazooClient, zk_root: str, task_id: str) -> TaskSpec:
    spec = parse_task(
        "SELECT k, COUNT(*) AS c FROM S GROUP BY k WINDOWING 1 h "
        f"WITH (event_time='t', event_time_format='epoch_ms', buckets={BUCKETS}, "
        "idle_timeout='2 s')",
        task_id=task_id,
    )
    TaskRegistry(zk_client, root=zk_root).create(spec)
    return spec


class Feeder:
    """Batches of event times inside the first hour on two partitions, from a thread."""

    def __init__(self, mapper: ScriptedMapper, lock: threading.Lock) -> None:
        self.expected: Expected = Counter()
        self._mapper, self._lock = mapper, lock
        self._rng = random.Random(5)
        self._t = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Feeder:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def send(self, partition: int, t: int) -> None:
        rows = [{"k": f"k{self._rng.randint(0, 19)}", "t": t} for _ in range(50)]
        with self._lock:
            self._mapper.send(partition, rows)
        for row in rows:
            self.expected[(row["t"] // HOUR_MS * HOUR_MS, row["k"])] += 1

    def _run(self) -> None:
        while not self._stop.is_set():
            self._t += 100  # ms of event time per round: the window stays open
            for partition in (0, 1):
                self.send(partition, self._t)
            self._stop.wait(0.05)


def committed_chain(store: SeqStore, spec: TaskSpec, unit: int, *, columnar: bool) -> list[str]:
    """The fields of the unit's committed checkpoint chain, as its owner last published them
    (after each commit): the full checkpoint, then its deltas; empty until it is a chain with
    a delta, in the state's layout (Arrow frames for the columnar state), still in Redis."""
    figures = store.reducer_stats.units(spec.id).get(unit, {})
    chain = chain_fields(figures.get("checkpoint"))
    parts = store.read_checkpoints(spec.id, unit, chain)
    if len(chain) < 2 or None in parts or is_columnar(parts[0] or b"") != columnar:
        return []
    return chain


def committed_checkpoints(client: redis.Redis, spec: TaskSpec, unit: int) -> int:
    """The newest checkpoint number written for `unit` less one: a checkpoint is numbered
    only after the previous one was committed with the unit's progress."""
    numbers = [int(f.split(b":")[0]) for f in client.hkeys(TaskKeys(spec.id).checkpoints(unit))]
    return max(numbers, default=1) - 1


@pytest.mark.timeout(300)
def test_owner_killed_mid_window_after_checkpoints_resumes_from_them(
    cluster: ClusterState,
    zk_client: KazooClient,
    zk_root: str,
    reducers: ReducerProcs,
    redis_client: redis.Redis,
    unique_name: str,
) -> None:
    columnar = reducers.extra_env["MARS_REDUCER__COLUMNAR_STATE"] == "true"
    store = SeqStore(redis_client)
    spec = hour_task(zk_client, zk_root, unique_name)
    lock = threading.Lock()
    mapper = ScriptedMapper(spec, store, WallClock(), partitions=2)  # type: ignore[arg-type]
    reader = CommittedReader(cluster.kafka_bootstrap, spec.output_topic)
    units = {f"{spec.id}/{b}" for b in range(BUCKETS)}
    reducers.start("ra")
    reducers.start("rb")
    try:
        wait_owned(redis_client, ["ra", "rb"], units)
        with Heartbeats(mapper, lock), Feeder(mapper, lock) as feeder:
            deadline = time.monotonic() + 90
            while any(
                committed_checkpoints(redis_client, spec, u) < CHECKPOINTS_BEFORE_KILL
                for u in range(BUCKETS)
            ) or not (chain := committed_chain(store, spec, 0, columnar=columnar)):
                assert time.monotonic() < deadline, "the owners did not checkpoint in time"
                time.sleep(0.05)
            victim = owners_of(redis_client, ["ra", "rb"])[f"{spec.id}/0"]
            released = store.snapshot(spec.id, 0).rseq - 1
            assert released > 0, "no data set of the open window was released before the kill"
            reducers.kill(victim)
            time.sleep(3.0)  # keep writing while unit 0 fails over
        assert not reader.records, "a 1-hour window closed early"
        # One batch per partition two hours later closes the window by event time.
        for partition in (0, 1):
            feeder.send(partition, 2 * HOUR_MS)
        with Heartbeats(mapper, lock):
            wanted = {key for key in feeder.expected if key[0] == 0}
            reader.wait_until(len(wanted), timeout_s=90)
        seen = Counter((row["window_start"], row["k"]) for row in reader.records)
        assert all(n == 1 for n in seen.values()), f"emitted twice: {seen.most_common(3)}"
        got = {(row["window_start"], row["k"]): row["c"] for row in reader.records}
        assert got == {key: n for key, n in feeder.expected.items() if key[0] == 0}
        print(
            f"\ncheckpoint failover: {released} data sets of unit 0 released before the kill, "
            f"its committed checkpoint a chain of {len(chain)}: {chain}"
        )
    finally:
        reader.close()
        store.delete_task(spec.id)

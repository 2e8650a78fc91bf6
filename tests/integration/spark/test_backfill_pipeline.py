"""Acceptance of the Spark backfill with the real pipeline: history by Spark, live traffic by
`mars mapper` processes, results by `mars reducer` processes, exactly once.

A 4-partition topic holds `HISTORY[mode]` generated records (four hours of event time) when the
task is registered. The first case runs the backfill as users do on a real Spark cluster, in
the order docs/spark.md prescribes:

1. the task is registered in ZooKeeper;
2. the backfill starts: `mars spark preagg --master spark://...` in a process of its own,
   against a standalone master with two workers (`LocalCluster.start_spark`), so the
   pre-aggregation runs in executors on the workers. It holds the task's watermark and claims
   the hand-over point of every partition (the topic's end at that moment);
3. two `mars mapper` and two `mars reducer` processes start; the mappers begin at the hand-over
   points; LIVE newer records are produced meanwhile at a bounded rate;
4. the backfill writes the history's partials and releases its hold;
5. the reducers close the windows (watermark, then idle close) and emit them transactionally.

Read with isolation.level=read_committed, every (window, sip, type) of history + live appears
exactly once and equals the DuckDB oracle over all records; nothing is late or bad, and the
counters account for every record.

The second case runs the backfill in the test's own local[2] session on a cluster that is
already running: the processes start first, the task is registered PAUSED (no mapper or reducer
runs it), the backfill claims its hand-over points, then the task is resumed (step 3) and the
live mappers take it from there.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import redis
from confluent_kafka.admin import AdminClient
from kazoo.client import KazooClient

from devtools.gen.partitioning import PartitionStrategy
from devtools.gen.produce import produce
from devtools.local import ClusterState, LocalCluster
from mars.config import Settings
from mars.registry import TaskRegistry, TaskStatus
from mars.sql import parse_task
from mars.store import SeqStore
from mars.store.backfill import BackfillCoordination
from mars.tasks.spec import TaskSpec
from spark.backfill_job import BackfillJob, run_backfill
from spark.sources import KafkaSource
from spark.summary import BackfillSummary
from tests.integration.pipeline import (
    BackgroundProducer,
    PipelineProcesses,
    ReducerCluster,
    TopicReader,
    create_task_topics,
    delete_task_topics,
    wait_for,
)
from tests.integration.spark.helpers import (
    BACKFILL_ORACLE,
    BACKFILL_SQL,
    StreamsOracle,
    history_and_live,
)

pytestmark = [pytest.mark.integration, pytest.mark.exclusive]

# History records per case: a million on the standalone cluster (the backfill's acceptance
# volume, docs/spark.md), fewer in local[2], whose cases check the order of events rather than
# the volume.
HISTORY = {
    "standalone": int(os.environ.get("MARS_TEST_SPARK_HISTORY", "1000000")),
    "paused": 300_000,
}
LIVE = int(os.environ.get("MARS_TEST_SPARK_LIVE", "100000"))
LIVE_PRODUCE_S = 20.0
PARTITIONS = 4
PROCESS_ENV = {
    "MARS_ZOOKEEPER__SESSION_TIMEOUT_S": "6",
    "MARS_REDUCER__TRANSACTION_TIMEOUT_MS": "10000",
    "MARS_REDUCER__POLL_INTERVAL_MS": "50",
}
ResultKey = tuple[int, str, str]  # (window_start, sip, type)


class BackfillThread:
    """`run_backfill` on a thread (the tests' local[2] session); `join` returns its summary or
    raises its error."""

    def __init__(self, spark: Any, settings: Settings, spec: TaskSpec) -> None:
        self.summary: BackfillSummary | None = None
        self.error: BaseException | None = None
        self.elapsed_s = 0.0
        job = BackfillJob(spec=spec, source=KafkaSource(), job="history")

        def run() -> None:
            started = time.monotonic()
            try:
                self.summary = run_backfill(spark, settings=settings, job=job)
            except BaseException as error:  # surfaced by join
                self.error = error
            self.elapsed_s = time.monotonic() - started

        self._thread = threading.Thread(target=run, name="backfill", daemon=True)
        self._thread.start()

    def done(self) -> bool:
        return not self._thread.is_alive()

    def join(self) -> BackfillSummary:
        self._thread.join()
        if self.error is not None:
            raise self.error
        assert self.summary is not None
        return self.summary


class BackfillProcess:
    """`mars spark preagg <task> --master <url>` in a process of its own; `join` waits for it
    and returns None (its summary is printed, not returned) or raises on a failure."""

    def __init__(self, *, master: str, spec: TaskSpec, env: dict[str, str], log: Path) -> None:
        self._log = log
        command = [sys.executable, "-m", "cli.main", "spark", "preagg", spec.id]
        command += ["--master", master, "--job", "history"]
        command += ["--conf", "spark.executor.memory=512m"]  # a worker offers 1 GiB
        with log.open("wb") as out:
            self._process = subprocess.Popen(
                command, env={**os.environ, **env}, stdout=out, stderr=subprocess.STDOUT
            )
        self._started = time.monotonic()
        self.elapsed_s = 0.0

    @property
    def error(self) -> str | None:
        code = self._process.poll()
        return None if code in (None, 0) else f"exit {code}: {self._log.read_text()[-3000:]}"

    def done(self) -> bool:
        return self._process.poll() is not None

    def join(self) -> None:
        code = self._process.wait(timeout=600)
        self.elapsed_s = time.monotonic() - self._started
        assert code == 0, self.error


@pytest.mark.timeout(600)
@pytest.mark.parametrize(
    "mode",
    ["standalone", "paused"],
    ids=[
        "on-a-spark-standalone-cluster-with-2-workers",
        "registered-paused-on-a-running-cluster",
    ],
)
def test_backfill_with_live_mappers_and_reducers_emits_every_window_once(
    mode: str,
    request: pytest.FixtureRequest,
    tmp_path: Path,
    spark: Any,
    settings: Settings,
    local_cluster: LocalCluster,
    cluster: ClusterState,
    kafka_admin: AdminClient,
    zk_client: KazooClient,
    zk_root: str,
    redis_client: redis.Redis,
    unique_name: str,
) -> None:
    phases: dict[str, float] = {}
    started = time.monotonic()
    spec = parse_task(
        BACKFILL_SQL.format(topic=f"{unique_name}_src"),
        task_id=unique_name,
        options={"idle_timeout": "2 s", "buckets": 8},
    )
    create_task_topics(kafka_admin, spec, source_partitions=PARTITIONS)
    bootstrap = cluster.kafka_bootstrap
    history = HISTORY[mode]
    history_stream, live_stream = history_and_live(history=history, live=LIVE, seeds=(11, 12))
    oracle = StreamsOracle([history_stream, live_stream], **BACKFILL_ORACLE)
    procs = PipelineProcesses(
        cluster=local_cluster,
        name=unique_name,
        env={
            **PROCESS_ENV,
            "MARS_ZOOKEEPER__ROOT": zk_root,
            "MARS_MAPPER__GROUP_ID": f"mappers-{unique_name}",
        },
    )
    reader = TopicReader(bootstrap, [spec.output_topic, spec.late_topic, spec.dead_letter_topic])
    store = SeqStore(redis_client)
    coordination = BackfillCoordination(redis_client)
    try:
        produce(
            settings.kafka,
            spec.source_topic,
            history_stream,
            strategy=PartitionStrategy.ROUND_ROBIN,
        )
        phases["history produced"] = time.monotonic() - started

        paused = mode == "paused"
        registry = TaskRegistry(zk_client, root=zk_root)
        if paused:  # the cluster runs first; the task waits, paused, for the backfill
            _start_processes(procs)
            registry.create(spec, status=TaskStatus.PAUSED)  # 1. register
        else:
            registry.create(spec)  # 1. register
        backfill: BackfillThread | BackfillProcess  # 2. hold + hand-over, then Spark
        if mode == "standalone":
            backfill = BackfillProcess(
                master=request.getfixturevalue("spark_master"),
                spec=spec,
                env={
                    **cluster.env(),
                    "MARS_ZOOKEEPER__ROOT": zk_root,
                    "MARS_LOCAL__JARS_DIR": str(settings.local.jars_dir),
                },
                log=tmp_path / "backfill.log",
            )
        else:
            backfill = BackfillThread(spark, settings, spec)
        wait_for(
            lambda: len(coordination.handovers(spec.id)) == PARTITIONS or backfill.done(),
            timeout_s=60,
            what="the backfill to claim the hand-over points",
        )
        assert backfill.error is None, backfill.error
        assert sum(coordination.handovers(spec.id).values()) == history
        assert "history" in coordination.holds(spec.id)

        if paused:  # 3. live processes take the task
            registry.set_status(spec.id, TaskStatus.RUNNING)
        else:
            _start_processes(procs)
        units = {f"{spec.id}/{bucket}" for bucket in range(spec.options.buckets)}
        wait_for(
            lambda: ReducerCluster.read(zk_client, root=zk_root).settled(members=2, units=units),
            timeout_s=60,
            what="2 reducers owning every unit",
            logs=procs.logs,
        )
        live = BackgroundProducer(
            bootstrap=bootstrap,
            topic=spec.source_topic,
            config=live_stream,
            rate=LIVE / LIVE_PRODUCE_S,
        )
        live.start()

        summary = backfill.join()  # 4. history written, hold released
        phases["backfill done"] = time.monotonic() - started
        if summary is not None:  # a `mars spark preagg` process prints its summary instead
            assert summary.records_in == history and summary.accepted == history
            assert summary.skipped == summary.bad == summary.late == 0
        else:  # the master ran it with an executor on each worker (each keeps its logs)
            run_dir = Path(local_cluster.run_dir)
            workers = {path.parents[2] for path in run_dir.glob("spark/*/app-*/*/stderr")}
            assert len(workers) == 2, sorted(run_dir.glob("spark/*/*"))
        assert coordination.holds(spec.id) == {}
        assert live.join(timeout_s=300).produced == LIVE

        wait_for(  # 5. the reducers close every window (more: a duplicate, asserted below)
            lambda: _counted(reader, spec) >= history + LIVE,
            timeout_s=240,
            what=lambda: (
                f"the results to count every record ({_counted(reader, spec):,} "
                f"of {history + LIVE:,} counted; {_shortfall(reader, spec, oracle, store)})"
            ),
            logs=procs.logs,
            every=lambda: reader.poll_for(1.0),
        )
        phases["all results emitted"] = time.monotonic() - started
        reader.poll_for(3.0)  # a duplicate would show up now
        expected = oracle.result(timeout_s=300)

        emitted: Counter[ResultKey] = Counter()
        results: dict[ResultKey, dict[str, Any]] = {}
        for row in reader.values(spec.output_topic):
            key = (row["window_start"], row["sip"], row["type"])
            emitted[key] += 1
            results[key] = {"cnt": row["cnt"], "total": row["total"]}
        duplicates = {key: n for key, n in emitted.items() if n > 1}
        assert not duplicates, f"{len(duplicates)} emitted more than once: {list(duplicates)[:5]}"
        assert expected.skipped == 0
        assert results == expected
        assert not reader.records[spec.late_topic] and not reader.records[spec.dead_letter_topic]
        stats = store.counters.read(spec.id)
        assert stats["records_in"] == stats["accepted"] == history + LIVE
        assert stats.get("late", 0) == stats.get("bad", 0) == 0
        print(
            f"\nspark backfill + live pipeline ({mode}): {history:,} history (Spark, "
            f"{history / max(backfill.elapsed_s, 1e-9):,.0f} records/s incl. job "
            f"start) + {LIVE:,} live (mappers), {len(results):,} results in "
            f"{len({key[0] for key in results})} windows; "
            + ", ".join(f"{name} at {t:.0f} s" for name, t in phases.items())
        )
    finally:
        procs.stop_all()
        reader.close()
        oracle.close()
        store.delete_task(spec.id)
        delete_task_topics(kafka_admin, spec)


def _start_processes(procs: PipelineProcesses) -> None:
    procs.start_many(["reducer", "reducer", "mapper", "mapper"])


def _counted(reader: TopicReader, spec: TaskSpec) -> int:
    """Records counted by the results read so far."""
    return sum(int(row["cnt"]) for row in reader.values(spec.output_topic))


def _shortfall(reader: TopicReader, spec: TaskSpec, oracle: StreamsOracle, store: SeqStore) -> str:
    """Where the results differ from the oracle's, per window, and each bucket's data set
    marks in Redis: what a timeout needs to tell a window never closed from one emitted twice."""
    counted: Counter[int] = Counter()
    for row in reader.values(spec.output_topic):
        counted[int(row["window_start"])] += int(row["cnt"])
    expected: Counter[int] = Counter()
    for (start, *_), value in oracle.result(timeout_s=60).items():
        expected[start] += int(value["cnt"])
    differing = {
        start: (counted[start], expected[start])
        for start in sorted(counted.keys() | expected.keys())
        if counted[start] != expected[start]
    }
    marks = {}
    for bucket in range(spec.options.buckets):
        snapshot = store.snapshot(spec.id, bucket)
        marks[bucket] = (snapshot.rseq, snapshot.seq)
    return (
        f"{len(differing)} windows differ, (counted, expected) by start: "
        f"{dict(list(differing.items())[:8])}; buckets' Redis (rseq, seq): {marks}"
    )

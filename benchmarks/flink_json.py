"""A Flink SQL query over a JSON topic, as a job file for `benchmarks.flink_job`, and its run:
what experiment 12 (Nexmark) and experiment 16 (groups per window) share.

The source: a Kafka table over the topic from the earliest offsets, JSON, the columns the
query reads (JSON fields not declared are skipped), the time attribute `ts` an expression of
them, `WATERMARK FOR ts AS ts` (0 out-of-orderness; the Kafka source keeps one watermark per
partition and emits their minimum, so one sentinel per partition, later than the data, closes
its last window). The sink: the result topic, JSON, exactly once (Kafka transactions committed
with each checkpoint), read with read_committed. The session's time zone is UTC.

`run_flink_job` runs one job in PyFlink's MiniCluster under the peers' virtualenv and times it
from the INSERT's submission (the child's `STARTED` marker) until the caller's `wait` says the
last result row is readable; `PeerUnavailable` when the peer is not installed or exits before
submitting the INSERT.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.flink_sql import exactly_once_sink_options, kafka_source_options, quoted
from benchmarks.peers import PeerUnavailable, flink_kafka_jar, peer_python
from benchmarks.procstat import tree_cpu_seconds, tree_peak_rss_mb
from benchmarks.subprocesses import read_markers, spawn_module, stop_group

Columns = tuple[tuple[str, str], ...]  # (name, Flink SQL type)


@dataclass(frozen=True, slots=True, kw_only=True)
class FlinkQuery:
    """What a query reads and writes: the source table (`table`, its JSON `columns`, the
    expression of its time attribute `ts`), the SELECT over it, the sink's columns in the
    SELECT's order."""

    table: str
    columns: Columns
    time: str  # e.g. "TO_TIMESTAMP_LTZ(`dateTime`, 3)"
    select: str
    sink_columns: Columns


@dataclass(frozen=True, slots=True, kw_only=True)
class FlinkJsonJob:
    """One run of a query: where it reads and writes, and how wide."""

    query: FlinkQuery
    bootstrap: str
    topic: str
    output: str
    run_id: str
    parallelism: int
    checkpoint_interval_s: float = 5.0


def source_ddl(job: FlinkJsonJob) -> str:
    columns = [f"  {quoted(name)} {kind}" for name, kind in job.query.columns]
    return (
        f"CREATE TABLE {job.query.table} (\n"
        + ",\n".join(columns)
        + f",\n  ts AS {job.query.time},\n"
        + "  WATERMARK FOR ts AS ts\n"
        + ") WITH (\n"
        + kafka_source_options(
            topic=job.topic,
            bootstrap=job.bootstrap,
            group=f"flink-{job.run_id}",
            data_format="json",
        )
        + "\n)"
    )


def sink_ddl(job: FlinkJsonJob) -> str:
    columns = ",\n".join(f"  {quoted(name)} {kind}" for name, kind in job.query.sink_columns)
    return (
        f"CREATE TABLE sink (\n{columns}\n) WITH (\n"
        + exactly_once_sink_options(
            topic=job.output,
            bootstrap=job.bootstrap,
            transactional_id_prefix=f"flink-{job.run_id}",
        )
        + "\n)"
    )


def job_file(job: FlinkJsonJob, *, jar: Path) -> dict[str, Any]:
    """What `benchmarks.flink_job --job` reads."""
    return {
        "configuration": {
            "parallelism.default": str(job.parallelism),
            "execution.checkpointing.interval": f"{int(job.checkpoint_interval_s * 1000)} ms",
            "table.local-time-zone": "UTC",
            "pipeline.jars": jar.resolve().as_uri(),
        },
        "settings": {
            "connector": jar.stem.removeprefix("flink-sql-connector-kafka-"),
            "parallelism": job.parallelism,
            "delivery_guarantee": "exactly-once",
            "checkpoint_interval_s": job.checkpoint_interval_s,
            "watermark_delay_s": 0,
        },
        "statements": [source_ddl(job), sink_ddl(job)],
        "insert": f"INSERT INTO sink\n{job.query.select}",
    }


@dataclass(frozen=True, slots=True, kw_only=True)
class FlinkRun:
    """One job's times (wall seconds), the CPU its process tree used from the INSERT's
    submission until the wait ended, its peak RSS, and the settings it printed."""

    launched: float
    started: float  # the INSERT submitted
    finished: float  # the last row readable; NaN: not by the timeout, or the job stopped
    cpu_s: float
    peak_rss_mb: float
    submitted: float = math.nan  # the INSERT's call returned (planned, the MiniCluster up)
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def seconds(self) -> float:
        return self.finished - self.started

    @property
    def complete(self) -> bool:
        return not math.isnan(self.finished)

    @property
    def startup_s(self) -> float:
        """From the launch to the INSERT (the JVM and the TableEnvironment; not timed)."""
        return self.started - self.launched

    @property
    def submit_s(self) -> float:
        """The INSERT's call: planning, the MiniCluster's start, the job's submission (part
        of `seconds`)."""
        return self.submitted - self.started


# Waits for the job's rows, given whether the job still runs; returns the wall time the last
# one became readable (NaN: never).
Wait = Callable[[Callable[[], bool]], float]


def run_flink_job(job: FlinkJsonJob, *, log_dir: Path, log_name: str, wait: Wait) -> FlinkRun:
    """Write the job file into `log_dir`, run the job (its output in `log_dir/log_name`), call
    `wait` once the INSERT is submitted, stop the job."""
    python = peer_python()
    jar = flink_kafka_jar()
    path = log_dir / f"{job.output}.json"
    path.write_text(json.dumps(job_file(job, jar=jar), indent=2))
    args = ["--job", str(path), "--log-dir", str(log_dir / f"flink-{job.run_id}")]
    launched = time.time()
    child = spawn_module("benchmarks.flink_job", args, log=log_dir / log_name, python=python)
    try:
        markers = read_markers(child, until="STARTED")
        if "STARTED" not in markers:
            raise PeerUnavailable(f"exited before starting its query (log {log_dir})")
        started = float(markers["STARTED"])
        cpu = tree_cpu_seconds(child.pid)
        finished = wait(lambda: child.poll() is None)
        cpu = tree_cpu_seconds(child.pid) - cpu
        rss = tree_peak_rss_mb(child.pid)
    finally:
        stop_group(child)
    return FlinkRun(
        launched=launched,
        started=started,
        finished=finished,
        cpu_s=cpu,
        peak_rss_mb=rss,
        submitted=float(markers.get("SUBMITTED", math.nan)),
        settings=json.loads(markers.get("SETTINGS", "{}")),
    )

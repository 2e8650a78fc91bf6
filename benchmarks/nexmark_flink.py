"""The Flink SQL job of one Nexmark query over the bids topic, as `benchmarks.flink_job` runs it.

The source: the bids topic from the earliest offsets, JSON, `ts AS TO_TIMESTAMP_LTZ(dateTime,
3)` with `WATERMARK FOR ts AS ts` (0 out-of-orderness; the Kafka source keeps one watermark per
partition and emits their minimum, so the sentinel bid of every partition closes the last data
window). The sink: the result topic, JSON, exactly once (Kafka transactions committed with each
checkpoint), read with read_committed. The session's time zone is UTC.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.flink_sql import TRANSACTION_TIMEOUT_MS, options, quoted
from benchmarks.nexmark_queries import NexmarkQuery

BID_COLUMNS = (
    ("auction", "BIGINT"),
    ("bidder", "BIGINT"),
    ("price", "BIGINT"),
    ("channel", "STRING"),
    ("url", "STRING"),
    ("dateTime", "BIGINT"),
    ("extra", "STRING"),
)


@dataclass(frozen=True, slots=True, kw_only=True)
class NexmarkFlinkJob:
    """One run of one query: where it reads and writes, and how wide."""

    query: NexmarkQuery
    bootstrap: str
    topic: str
    output: str
    run_id: str
    parallelism: int
    checkpoint_interval_s: float = 5.0


def source_ddl(job: NexmarkFlinkJob) -> str:
    columns = [f"  {quoted(name)} {kind}" for name, kind in BID_COLUMNS]
    return (
        "CREATE TABLE bids (\n"
        + ",\n".join(columns)
        + ",\n  ts AS TO_TIMESTAMP_LTZ(`dateTime`, 3),\n"
        + "  WATERMARK FOR ts AS ts\n"
        + ") WITH (\n"
        + options(
            {
                "connector": "kafka",
                "topic": job.topic,
                "properties.bootstrap.servers": job.bootstrap,
                "properties.group.id": f"flink-{job.run_id}",
                "scan.startup.mode": "earliest-offset",
                "format": "json",
            }
        )
        + "\n)"
    )


def sink_ddl(job: NexmarkFlinkJob) -> str:
    columns = ",\n".join(f"  {quoted(name)} {kind}" for name, kind in job.query.flink_columns)
    return (
        f"CREATE TABLE sink (\n{columns}\n) WITH (\n"
        + options(
            {
                "connector": "kafka",
                "topic": job.output,
                "properties.bootstrap.servers": job.bootstrap,
                "properties.transaction.timeout.ms": str(TRANSACTION_TIMEOUT_MS),
                "format": "json",
                "sink.delivery-guarantee": "exactly-once",
                "sink.transactional-id-prefix": f"flink-{job.run_id}",
            }
        )
        + "\n)"
    )


def job_file(job: NexmarkFlinkJob, *, jar: Path) -> dict[str, Any]:
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
        "insert": f"INSERT INTO sink\n{job.query.flink_select}",
    }

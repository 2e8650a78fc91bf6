"""The reference query in Flink SQL (PyFlink), the JVM stream processor peer of experiment 3.

    <peer venv>/bin/python -m benchmarks.flink_sql --bootstrap H:P --topic S --output OUT \
        --group G --transactional-id-prefix T --jar flink-sql-connector-kafka.jar \
        --fields timestamp,type,sip,... --parallelism 2 --log-dir DIR [--format csv|json]

Runs under the peers' virtualenv (`scripts/setup_peers.sh`: `apache-flink` and the Kafka SQL
connector jar built for that Flink), so it imports nothing but the standard library and
`pyflink`, and that only in `main` (the SQL below is plain text the unit tests read). The job,
written as Flink's documentation writes it, runs in the local MiniCluster of the PyFlink
gateway's JVM (a child of this process), parallelism `--parallelism` (2 in the benchmark):

- a Kafka source table over the preloaded topic from the earliest offsets, the CSV format
  with every column of the tuple declared (or the JSON format with the three columns the query
  reads: JSON fields not declared are skipped), event time `ts` computed from the record's epoch
  seconds, `WATERMARK FOR ts AS ts` (0 s out-of-orderness; the Kafka source keeps one
  watermark per partition and emits their minimum, so one sentinel per partition moves it
  past the last data window);
- `TUMBLE(TABLE source, DESCRIPTOR(ts), INTERVAL '60' SECOND)` grouped by `window_start`,
  `window_end`, `sip`, `type` with `COUNT(*)` (the window table-valued function; results are
  append-only, one row per window and group once the watermark passes the window's end);
- a Kafka sink table, JSON rows `window_start` (epoch ms), `sip`, `type`, `count` (the shape
  of the Spark peer's rows), `sink.delivery-guarantee = 'exactly-once'`: Kafka transactions
  committed when a checkpoint completes (every `--checkpoint-interval-s`), read with
  read_committed.

The session time zone is UTC, so that `window_start` (a TIMESTAMP in the session's zone for a
TIMESTAMP_LTZ time attribute) turns back into epoch milliseconds without an offset.

Runs the job with `benchmarks.flink_job.run_job` (the markers `SETTINGS`, `SESSION`,
`STARTED` on stdout; until terminated).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any

from benchmarks.flink_job import run_job

# The columns the query reads; every other column of the tuple is declared as text and unused.
TIMESTAMP_COLUMN = "timestamp"
KEY_COLUMNS = ("sip", "type")
# The Kafka sink's transactions must end within the broker's transaction.max.timeout.ms
# (15 min by default); the connector's own default (1 h) is refused by such a broker.
TRANSACTION_TIMEOUT_MS = 600_000
# A window TVF's window_start is a TIMESTAMP(3) in the session's zone (UTC): seconds since the
# epoch by TIMESTAMPDIFF (an INT, enough until 2038), then milliseconds, as Mars's rows have it.
WINDOW_START_MS = (
    "CAST(TIMESTAMPDIFF(SECOND, TIMESTAMP '1970-01-01 00:00:00', window_start) AS BIGINT) * 1000"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class FlinkJob:
    """What the job reads and writes, and how (the command line, validated)."""

    bootstrap: str
    topic: str
    output: str
    group: str
    transactional_id_prefix: str
    fields: tuple[str, ...]
    parallelism: int
    window_s: int = 60
    checkpoint_interval_s: float = 5.0
    format: str = "csv"  # or "json"

    def __post_init__(self) -> None:
        missing = {TIMESTAMP_COLUMN, *KEY_COLUMNS} - set(self.fields)
        if missing:
            raise ValueError(f"--fields lacks {sorted(missing)}")


def quoted(name: str) -> str:
    """An SQL identifier (`timestamp`, `type` and `count` are reserved words)."""
    return "`" + name.replace("`", "``") + "`"


def options(values: dict[str, str]) -> str:
    return ",\n".join(f"  '{key}' = '{value}'" for key, value in values.items())


def kafka_source_options(*, topic: str, bootstrap: str, group: str, data_format: str) -> str:
    """The WITH options of a Kafka source table read from the earliest offsets."""
    return options(
        {
            "connector": "kafka",
            "topic": topic,
            "properties.bootstrap.servers": bootstrap,
            "properties.group.id": group,
            "scan.startup.mode": "earliest-offset",
            "format": data_format,
        }
    )


def exactly_once_sink_options(*, topic: str, bootstrap: str, transactional_id_prefix: str) -> str:
    """The WITH options of a JSON Kafka sink table written in transactions (exactly once)."""
    return options(
        {
            "connector": "kafka",
            "topic": topic,
            "properties.bootstrap.servers": bootstrap,
            "properties.transaction.timeout.ms": str(TRANSACTION_TIMEOUT_MS),
            "format": "json",
            "sink.delivery-guarantee": "exactly-once",
            "sink.transactional-id-prefix": transactional_id_prefix,
        }
    )


def source_ddl(job: FlinkJob) -> str:
    declared = job.fields if job.format == "csv" else (TIMESTAMP_COLUMN, *KEY_COLUMNS)
    columns = [
        f"  {quoted(name)} {'BIGINT' if name == TIMESTAMP_COLUMN else 'STRING'}"
        for name in declared
    ]
    return (
        "CREATE TABLE source (\n"
        + ",\n".join(columns)
        + ",\n"
        + f"  ts AS TO_TIMESTAMP_LTZ({quoted(TIMESTAMP_COLUMN)}, 0),\n"
        + "  WATERMARK FOR ts AS ts\n"
        + ") WITH (\n"
        + kafka_source_options(
            topic=job.topic, bootstrap=job.bootstrap, group=job.group, data_format=job.format
        )
        + "\n)"
    )


def sink_ddl(job: FlinkJob) -> str:
    return (
        "CREATE TABLE sink (\n"
        "  window_start BIGINT,\n"
        f"  {quoted('sip')} STRING,\n"
        f"  {quoted('type')} STRING,\n"
        f"  {quoted('count')} BIGINT\n"
        ") WITH (\n"
        + exactly_once_sink_options(
            topic=job.output,
            bootstrap=job.bootstrap,
            transactional_id_prefix=job.transactional_id_prefix,
        )
        + "\n)"
    )


def insert_sql(job: FlinkJob) -> str:
    """The reference query: COUNT(*) per (sip, type) and 60 s tumbling window of event time."""
    keys = ", ".join(quoted(key) for key in KEY_COLUMNS)
    return (
        f"INSERT INTO sink\n"
        f"SELECT {WINDOW_START_MS} AS window_start, {keys}, COUNT(*) AS {quoted('count')}\n"
        f"FROM TABLE(TUMBLE(TABLE source, DESCRIPTOR(ts), INTERVAL '{job.window_s}' SECOND))\n"
        f"GROUP BY window_start, window_end, {keys}"
    )


def configuration(job: FlinkJob, *, jar: Path) -> dict[str, str]:
    """The Flink configuration the TableEnvironment is built with."""
    return {
        "parallelism.default": str(job.parallelism),
        "execution.checkpointing.interval": f"{int(job.checkpoint_interval_s * 1000)} ms",
        "table.local-time-zone": "UTC",
        "pipeline.jars": jar.resolve().as_uri(),
    }


def settings(job: FlinkJob, *, flink_version: str, jar: Path) -> dict[str, Any]:
    """What the report says about this peer: the versions and every setting that matters."""
    return {
        "flink": flink_version,
        "connector": jar.stem.removeprefix("flink-sql-connector-kafka-"),
        "parallelism": job.parallelism,
        "delivery_guarantee": "exactly-once",
        "checkpoint_interval_s": job.checkpoint_interval_s,
        "window_s": job.window_s,
        "watermark_delay_s": 0,
        "startup_mode": "earliest-offset",
        "format": job.format,
    }


def parse(argv: list[str] | None) -> tuple[FlinkJob, Path, Path]:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--transactional-id-prefix", required=True)
    parser.add_argument("--jar", required=True, help="the flink-sql-connector-kafka jar")
    parser.add_argument("--fields", required=True, help="the CSV columns' names, in order")
    parser.add_argument("--log-dir", required=True, help="where the JVM writes its log")
    parser.add_argument("--window-s", type=int, default=60)
    parser.add_argument("--parallelism", type=int, required=True)
    parser.add_argument("--checkpoint-interval-s", type=float, default=5.0)
    parser.add_argument("--format", choices=("csv", "json"), default="csv")
    args = parser.parse_args(argv)
    job = FlinkJob(
        bootstrap=args.bootstrap,
        topic=args.topic,
        output=args.output,
        group=args.group,
        transactional_id_prefix=args.transactional_id_prefix,
        fields=tuple(args.fields.split(",")),
        window_s=args.window_s,
        parallelism=args.parallelism,
        checkpoint_interval_s=args.checkpoint_interval_s,
        format=args.format,
    )
    return job, Path(args.jar), Path(args.log_dir)


def main(argv: list[str] | None = None) -> int:
    job, jar, log_dir = parse(argv)
    if not jar.is_file():
        raise SystemExit(f"no connector jar at {jar}")
    return run_job(
        configuration=configuration(job, jar=jar),
        settings=settings(job, flink_version=version("apache-flink"), jar=jar),
        statements=[source_ddl(job), sink_ddl(job)],
        insert=insert_sql(job),
        log_dir=log_dir,
    )


if __name__ == "__main__":
    sys.exit(main())

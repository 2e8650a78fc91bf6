"""The Flink SQL peer's pure parts: the command line the benchmark builds and the peer program
reads back, the job's SQL, the connector jar's look-up and its row in the report."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchmarks.e2e_peers import flink_args
from benchmarks.exp_end_to_end import PEER_NAMES, peer_run
from benchmarks.flink_sql import FlinkJob, configuration, insert_sql, parse, sink_ddl, source_ddl
from benchmarks.flink_sql import settings as flink_settings
from benchmarks.peers import PeerUnavailable, flink_kafka_jar
from benchmarks.report import render_report
from devtools.gen import FIELD_NAMES
from tests.unit.bench.test_bench_e2e import SMALL_DATASET, e2e, system

JAR = Path("/jars/flink-sql-connector-kafka-5.0.0-2.2.jar")


def job_of_the_benchmark(tmp_path: Path) -> tuple[FlinkJob, Path, Path]:
    args = flink_args(
        bootstrap="127.0.0.1:9092",
        topic="S",
        output="flink-out-ab12",
        run_id="ab12",
        parallelism=2,
        jar=JAR,
        log_dir=tmp_path,
    )
    return parse(args)


def test_the_benchmark_command_line_is_what_the_peer_reads(tmp_path: Path) -> None:
    job, jar, log_dir = job_of_the_benchmark(tmp_path)
    assert job == FlinkJob(
        bootstrap="127.0.0.1:9092",
        topic="S",
        output="flink-out-ab12",
        group="flink-ab12",
        transactional_id_prefix="flink-ab12",
        fields=tuple(FIELD_NAMES),
        parallelism=2,
        window_s=60,
    )
    assert jar == JAR
    assert log_dir == tmp_path / "flink-ab12"


def test_the_source_declares_every_column_and_a_watermark(tmp_path: Path) -> None:
    job, _, _ = job_of_the_benchmark(tmp_path)
    ddl = source_ddl(job)
    assert "  `timestamp` BIGINT,\n" in ddl and "  `sip` STRING,\n" in ddl
    assert ddl.count(" STRING,\n") == len(FIELD_NAMES) - 1
    assert "ts AS TO_TIMESTAMP_LTZ(`timestamp`, 0)" in ddl
    assert "WATERMARK FOR ts AS ts\n" in ddl
    for option in (
        "'topic' = 'S'",
        "'properties.bootstrap.servers' = '127.0.0.1:9092'",
        "'properties.group.id' = 'flink-ab12'",
        "'scan.startup.mode' = 'earliest-offset'",
        "'format' = 'csv'",
    ):
        assert option in ddl


def test_the_sink_is_exactly_once_json_in_the_result_readers_shape(tmp_path: Path) -> None:
    job, _, _ = job_of_the_benchmark(tmp_path)
    ddl = sink_ddl(job)
    assert "window_start BIGINT,\n  `sip` STRING,\n  `type` STRING,\n  `count` BIGINT\n" in ddl
    for option in (
        "'topic' = 'flink-out-ab12'",
        "'format' = 'json'",
        "'sink.delivery-guarantee' = 'exactly-once'",
        "'sink.transactional-id-prefix' = 'flink-ab12'",
        "'properties.transaction.timeout.ms' = '600000'",
    ):
        assert option in ddl


def test_the_query_is_a_tumbling_window_count_per_sip_and_type(tmp_path: Path) -> None:
    job, jar, _ = job_of_the_benchmark(tmp_path)
    sql = insert_sql(job)
    assert "FROM TABLE(TUMBLE(TABLE source, DESCRIPTOR(ts), INTERVAL '60' SECOND))" in sql
    assert sql.endswith("GROUP BY window_start, window_end, `sip`, `type`")
    assert "COUNT(*) AS `count`" in sql and " * 1000 AS window_start" in sql
    assert configuration(job, jar=jar) == {
        "parallelism.default": "2",
        "execution.checkpointing.interval": "5000 ms",
        "table.local-time-zone": "UTC",
        "pipeline.jars": JAR.as_uri(),
    }
    assert flink_settings(job, flink_version="2.2.1", jar=jar)["connector"] == "5.0.0-2.2"


def test_a_job_without_the_querys_columns_is_refused() -> None:
    with pytest.raises(ValueError, match="sip"):
        FlinkJob(
            bootstrap="b",
            topic="S",
            output="O",
            group="g",
            transactional_id_prefix="t",
            fields=("timestamp", "type"),
            parallelism=2,
        )


def test_the_connector_jar_is_found_or_the_peer_is_unavailable(tmp_path: Path) -> None:
    with pytest.raises(PeerUnavailable, match="no flink-sql-connector-kafka"):
        flink_kafka_jar(tmp_path)
    jar = tmp_path / "flink-sql-connector-kafka-5.0.0-2.2.jar"
    jar.write_bytes(b"")
    assert flink_kafka_jar(tmp_path) == jar
    (tmp_path / "flink-sql-connector-kafka-4.0.1-2.0.jar").write_bytes(b"")
    with pytest.raises(PeerUnavailable, match="2 flink-sql-connector-kafka"):
        flink_kafka_jar(tmp_path)


def test_a_missing_jar_makes_flink_sql_a_note_not_a_failure(tmp_path: Path) -> None:
    data = SMALL_DATASET
    notes: list[str] = []

    def without_jar() -> dict[str, Any]:
        flink_kafka_jar(tmp_path / "no-jars")
        raise AssertionError("unreachable")

    assert (
        peer_run(without_jar, name=PEER_NAMES["flink"], data=data, notes=notes, log=print) is None
    )
    assert notes == [
        f"Flink SQL not measured: no flink-sql-connector-kafka-*.jar in {tmp_path / 'no-jars'}, "
        "one expected (`make bench` builds it (scripts/setup_peers.sh))"
    ]


FLINK_SETTINGS = {
    "flink": "2.2.1",
    "connector": "5.0.0-2.2",
    "parallelism": 2,
    "delivery_guarantee": "exactly-once",
    "checkpoint_interval_s": 5.0,
    "window_s": 60,
    "watermark_delay_s": 0,
    "startup_mode": "earliest-offset",
}


def with_flink(flink: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    found = e2e(quix=None, notes=notes)
    found["flink"] = flink
    found["memory"]["flink_peak_rss_mb"] = {"runs": [900], "median": 900, "min": 900, "max": 900}
    return found


def test_the_flink_sql_row_settings_ratio_and_memory() -> None:
    flink = {**system(4.0, 25_000, 9.0, 6.0), "parallelism": 2, "settings": FLINK_SETTINGS}
    text = render_report({"machine": {}, "e2e": with_flink(flink, [])}, images={})
    assert "| Flink SQL 2.2.1 | 6.0 | 4.0 | 25,000 | 3.6 | 10,000 | 9.0 | 90.0 |" in text
    assert "Flink SQL 2.2.1 (PyFlink in the same virtualenv, with the Kafka SQL connector " in text
    assert "5.0.0-2.2 from Maven Central" in text and "parallelism 2;" in text
    assert "`WATERMARK FOR ts AS ts` (0 s;" in text
    assert "INTERVAL '60' SECOND)` grouped by window, sip and type" in text
    assert "`sink.delivery-guarantee = 'exactly-once'`" in text
    assert "checkpoints every 5 s, as Quix Streams' default commit interval" in text
    assert "(`scan.startup.mode = 'earliest-offset'`, the CSV format)" in text
    assert "Mars vs PySpark: 5.00x; Mars vs Flink SQL: 2.00x" in text
    assert "the TableEnvironment alone: 6.5 s" in text
    assert "; Flink SQL, its Python process and JVM once the INSERT is submitted." in text
    assert "| Flink SQL RSS, Python process + JVM (for comparison) | 900 |" in text
    assert "vs Flink SQL vs the ceiling" in text


def test_flink_not_measured_is_a_note_and_older_results_have_no_flink_row() -> None:
    note = "Flink SQL not measured: no flink-sql-connector-kafka-*.jar in /x, one expected"
    nan = float("nan")
    flink = {**system(nan, nan, nan, nan), "runs": [], "settings": {}}
    text = render_report({"machine": {}, "e2e": with_flink(flink, [note])}, images={})
    assert "Flink SQL: not measured in this run (see below)." in text
    assert f"- {note}" in text
    assert "| Flink SQL | — | — | — | — | — | — | — |" in text
    assert "TableEnvironment alone" not in text
    older = render_report({"machine": {}, "e2e": e2e(quix=None, notes=[])}, images={})
    assert "| Flink SQL" not in older and "Mars vs Flink" not in older

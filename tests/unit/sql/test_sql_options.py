"""Task options from the WITH (...) clause and the options mapping (which wins)."""

from __future__ import annotations

from typing import Any

import pytest

from mars.sql import TaskError, parse_task
from mars.sql.durations import DurationError, parse_duration_text
from mars.tasks.spec import (
    CsvFormat,
    EventTime,
    InputFormat,
    Preaggregation,
    TaskOptions,
    TaskSpec,
    TimeFormat,
)

BASE = "SELECT a, count(*) FROM S GROUP BY a WINDOWING 1 s"


def test_defaults() -> None:
    spec = parse_task(BASE, task_id="t")
    assert spec.event_time == EventTime(field="timestamp", format=TimeFormat.EPOCH_S)
    assert spec.options == TaskOptions()


def test_with_clause_sets_every_option() -> None:
    spec = parse_task(
        BASE + " WITH (event_time = ts, event_time_format = 'iso8601', format = csv, "
        "csv_columns = 'ts, a', csv_delimiter = ';', output_topic = 'stats.out', "
        "buckets = 32, idle_timeout = 2 minutes)",
        task_id="t",
    )
    assert spec.event_time == EventTime(field="ts", format=TimeFormat.ISO8601)
    assert spec.options == TaskOptions(
        input_format=InputFormat.CSV,
        csv=CsvFormat(columns=("ts", "a"), delimiter=";"),
        output_topic="stats.out",
        buckets=32,
        idle_timeout_ms=120_000,
    )
    assert spec.output_topic == "stats.out"


def test_mapping_wins_over_with_clause() -> None:
    spec = parse_task(
        BASE + " WITH (buckets = 4, event_time_format = epoch_ms)",
        task_id="t",
        options={
            "buckets": 64,
            "idle_timeout": 1500,
            "csv_columns": ["a", "timestamp"],
            "format": "CSV",
        },
    )
    assert spec.options.buckets == 64
    assert spec.options.idle_timeout_ms == 1500
    assert spec.options.csv == CsvFormat(columns=("a", "timestamp"))
    assert spec.event_time.format is TimeFormat.EPOCH_MS


def test_processing_time() -> None:
    spec = parse_task(BASE, task_id="t", options={"event_time": "processing"})
    assert spec.event_time == EventTime(field=None, format=TimeFormat.PROCESSING)


@pytest.mark.parametrize(
    ("text", "ms"),
    [("30 s", 30_000), ("30s", 30_000), ("250", 250), ("1.5 m", 90_000), ("2 HOURS", 7_200_000)],
)
def test_duration_text(text: str, ms: int) -> None:
    assert parse_duration_text(text) == ms


@pytest.mark.parametrize("text", ["", "s", "5 weeks", "1.0001 s"])
def test_bad_duration_text(text: str) -> None:
    with pytest.raises(DurationError):
        parse_duration_text(text)


@pytest.mark.parametrize("value", ["10 s", 10_000, "10000"])
def test_idle_timeout_forms(value: Any) -> None:
    spec = parse_task(BASE, task_id="t", options={"idle_timeout": value})
    assert spec.options.idle_timeout_ms == 10_000


@pytest.mark.parametrize(
    ("clauses", "options", "interval_ms"),
    [
        ("", None, None),
        ("EMIT FINAL", None, None),
        ("EMIT CHANGES", None, 1_000),
        ("EMIT CHANGES EVERY 5 s", None, 5_000),
        ("emit changes every 250 ms", None, 250),
        ("WITH (emit = 'changes', emit_interval = '10 s')", None, 10_000),
        ("", {"emit": "changes", "emit_interval": "2 s"}, 2_000),
        ("EMIT CHANGES EVERY 5 s", {"emit_interval": "7 s"}, 7_000),  # the caller's wins
    ],
)
def test_emit_sets_the_update_interval_and_the_updates_topic(
    clauses: str, options: dict[str, str] | None, interval_ms: int | None
) -> None:
    spec = parse_task(
        f"SELECT type, count(*) FROM S GROUP BY type WINDOWING 10 m {clauses}",
        task_id="t",
        options=options,
    )
    assert spec.options.emit_interval_ms == interval_ms
    assert spec.updates_topic == (None if interval_ms is None else "mars.updates.t")
    assert TaskSpec.from_json_dict(spec.to_json_dict()) == spec


def test_preaggregation_chooses_mappers_or_a_spark_stream() -> None:
    sql = "SELECT type, count(*) FROM S GROUP BY type WINDOWING 10 s"
    assert parse_task(sql, task_id="t").options.preaggregation is Preaggregation.MAPPERS
    spec = parse_task(sql + " WITH (preaggregation = 'spark')", task_id="t")
    assert spec.options.preaggregation is Preaggregation.SPARK
    assert TaskSpec.from_json_dict(spec.to_json_dict()) == spec
    with pytest.raises(TaskError, match="preaggregation"):
        parse_task(sql, task_id="t", options={"preaggregation": "flink"})

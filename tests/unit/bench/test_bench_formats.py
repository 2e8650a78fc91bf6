"""Experiment 3c's pure parts: the tuples and sentinels in each format, the tasks and peers
over them, and the section with its targets."""

from __future__ import annotations

import io
import json
from pathlib import Path

import fastavro
import pytest

from benchmarks.e2e_peers import flink_args
from benchmarks.flink_sql import parse, source_ddl
from benchmarks.report import render_report
from benchmarks.workload import CSV_INPUT, InputFormat, paper_sql, sentinel_value
from devtools.gen import FIELD_NAMES, Encoding
from devtools.gen.binary_encoding import reference_schema
from mars.sql import parse_task
from mars.tasks.spec import InputFormat as TaskFormat
from mars.tasks.spec import TimeFormat
from tests.unit.bench.test_bench_e2e import system


def test_the_csv_sentinel_is_the_tuple_it_always_was() -> None:
    cells = sentinel_value(1_700_000_000).decode().split(",")
    assert len(cells) == len(FIELD_NAMES)
    assert cells[FIELD_NAMES.index("timestamp")] == "1700000000"
    assert cells[FIELD_NAMES.index("type")] == "sentinel"
    assert cells[FIELD_NAMES.index("sip")] == "0.0.0.0"


def test_the_json_and_avro_sentinels_carry_the_same_tuple() -> None:
    from_json = json.loads(sentinel_value(1_700_000_000, Encoding.JSON))
    schema = fastavro.parse_schema(json.loads(reference_schema(Encoding.AVRO, TimeFormat.EPOCH_S)))
    avro = sentinel_value(1_700_000_000, Encoding.AVRO)
    from_avro = fastavro.schemaless_reader(io.BytesIO(avro), schema, None)
    assert from_json == from_avro
    assert (from_json["timestamp"], from_json["type"]) == (1_700_000_000, "sentinel")
    assert set(from_json) == set(FIELD_NAMES)


@pytest.mark.parametrize("encoding", list(Encoding))
def test_the_reference_task_reads_each_format(encoding: Encoding, tmp_path: Path) -> None:
    schema_file = None
    if encoding in (Encoding.AVRO, Encoding.PROTOBUF):
        path = tmp_path / f"S.{'avsc' if encoding is Encoding.AVRO else 'proto'}"
        path.write_text(reference_schema(encoding, TimeFormat.EPOCH_S))
        schema_file = str(path)
    given = InputFormat(encoding=encoding, schema_file=schema_file)
    spec = parse_task(paper_sql("S", input_format=given), task_id="t")
    assert spec.options.input_format is TaskFormat(encoding.value)


def test_csv_stays_the_default_input() -> None:
    assert paper_sql("S") == paper_sql("S", input_format=CSV_INPUT)
    assert "csv_columns=" in paper_sql("S")


def test_flink_over_json_declares_only_the_fields_the_query_reads(tmp_path: Path) -> None:
    args = flink_args(
        bootstrap="127.0.0.1:9092",
        topic="S_format_json",
        output="flink-out-ab12",
        run_id="ab12",
        parallelism=2,
        jar=Path("/jars/flink-sql-connector-kafka-5.0.0-2.2.jar"),
        log_dir=tmp_path,
        text_format="json",
    )
    job, _, _ = parse(args)
    ddl = source_ddl(job)
    assert "'format' = 'json'" in ddl
    assert ddl.count(" STRING,\n") == 2 and "  `timestamp` BIGINT,\n" in ddl


def test_the_formats_section_checks_cost_per_record_and_the_peers() -> None:
    def mars(cpu_per_million: float, rate: float) -> dict[str, object]:
        return system(3_000_000 / rate, rate, cpu_per_million * 3, 2.0) | {
            "cpu_s_per_million": {"runs": [cpu_per_million], "median": cpu_per_million},
        }

    result = {
        "mappers": 2,
        "reducers": 2,
        "mars": {
            "csv": mars(1.0, 900_000),
            "json": mars(1.2, 800_000),
            "avro": mars(1.5, 700_000),
            "protobuf": mars(9.0, 200_000),
        },
        "spark_json": system(20.0, 150_000, 30.0, 6.0),
        "flink_json": {**system(25.0, 120_000, 30.0, 3.0), "settings": {"flink": "2.2.1"}},
        "topics": {
            name: {"topic": f"S_format_{name}", "records": 3_000_000, "mean_bytes": size}
            for name, size in (("csv", 144), ("json", 381), ("avro", 131), ("protobuf", 155))
        },
        "notes": [],
    }
    text = render_report({"machine": {}, "formats": result}, images={})
    section = text.split("## 3c. Steady state per input format")[1].split("\n## ")[0]
    assert "| Mars, JSON | 381 |" in section and "| 1.20x |" in section
    assert "| Flink SQL 2.2.1, JSON | 381 |" in section
    assert "- Mars JSON: 1.20x CSV's CPU per record, target <= 1.25x: met" in section
    assert "- Mars Avro: 1.50x CSV's CPU per record, target <= 1.25x: **missed**" in section
    assert "PySpark Structured Streaming JSON, records/s: 5.33x, target 3x: met" in section
    assert "Flink SQL (ahead: more than 1x) JSON, records/s: 6.67x, target 1x: met" in section

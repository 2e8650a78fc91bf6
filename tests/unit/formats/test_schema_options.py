"""format = avro / protobuf and the schema options: what registers, and the 4xx otherwise."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mars.sql import TaskError, parse_task
from mars.sql.schema_options import missing_schema_source
from mars.tasks.spec import InputFormat, TaskSpec
from tests.unit.formats.format_helpers import AVRO_V1, PROTO_V1

BASE = "SELECT sip, count(*) FROM S GROUP BY sip WINDOWING 1 s WITH "


@pytest.fixture
def avsc(tmp_path: Path) -> str:
    path = tmp_path / "flow.avsc"
    path.write_text(json.dumps(AVRO_V1))
    return str(path)


@pytest.fixture
def proto(tmp_path: Path) -> str:
    path = tmp_path / "flow.proto"
    path.write_text(PROTO_V1)
    return str(path)


def test_registry_mode_needs_no_schema_option() -> None:
    spec = parse_task(BASE + "(format = 'avro')", task_id="t")
    assert spec.options.input_format is InputFormat.AVRO
    assert spec.options.schema_file is None
    assert TaskSpec.from_json_dict(spec.to_json_dict()) == spec


def test_schema_files_register_and_round_trip(avsc: str, proto: str) -> None:
    spec = parse_task(BASE + f"(format = 'avro', schema_file = '{avsc}')", task_id="t")
    assert spec.options.schema_file == avsc
    spec = parse_task(
        BASE + f"(format = protobuf, schema_file = '{proto}', protobuf_message = 'Other')",
        task_id="t",
    )
    assert (spec.options.input_format, spec.options.protobuf_message) == (
        InputFormat.PROTOBUF,
        "Other",
    )
    assert TaskSpec.from_json_dict(spec.to_json_dict()) == spec


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            "(schema_file = '{avsc}')",
            "option schema_file: needs format = avro or format = protobuf",
        ),
        ("(format = csv, csv_columns = 'a', schema_file = '{avsc}')", "needs format = avro"),
        (
            "(format = avro, protobuf_message = 'M')",
            "option protobuf_message: needs format = protobuf",
        ),
        (
            "(format = protobuf, protobuf_message = 'M')",
            "option protobuf_message: needs a schema_file",
        ),
        ("(format = avro, csv_columns = 'a')", "option csv_columns: needs format = csv"),
        ("(format = avro, schema_file = '/no/such.avsc')", "cannot read schema_file"),
        ("(format = avro, schema_file = '{proto}')", "not a valid Avro schema"),
        ("(format = protobuf, schema_file = '{avsc}')", "does not compile"),
        (
            "(format = protobuf, schema_file = '{proto}', protobuf_message = 'Nope')",
            "no message 'Nope'",
        ),
        ("(format = parquet)", "'parquet' is not one of json, csv, avro, protobuf"),
    ],
)
def test_bad_combinations_name_the_problem(
    options: str, message: str, avsc: str, proto: str
) -> None:
    with pytest.raises(TaskError, match=message):
        parse_task(BASE + options.format(avsc=avsc, proto=proto), task_id="t")


def test_a_registry_mode_task_needs_a_registry_and_a_schema_file_task_does_not() -> None:
    url = "http://registry:8080/apis/ccompat/v7"
    for input_format in (InputFormat.AVRO, InputFormat.PROTOBUF):
        problem = missing_schema_source(input_format, None, None)
        assert problem is not None
        assert f"format = '{input_format.value}'" in problem and "schema_file" in problem
        assert missing_schema_source(input_format, None, url) is None
        assert missing_schema_source(input_format, "/schemas/flow.avsc", None) is None
    assert missing_schema_source(InputFormat.JSON, None, None) is None

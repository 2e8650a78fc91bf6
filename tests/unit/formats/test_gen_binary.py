"""`mars gen --format avro|protobuf`: the reference tuples decode back to the JSON ones."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from devtools.gen import FIELD_NAMES, Encoding, GeneratorConfig, generate
from devtools.gen.binary_encoding import reference_schema
from mars.engine.decode import ROW, FieldPlan
from mars.formats.decoders import binary_decoder_for
from mars.formats.schema_registry import RegisteredSchema
from mars.tasks.spec import InputFormat, TaskOptions, TimeFormat
from tests.unit.formats.format_helpers import FakeRegistry

PLAN = FieldPlan(fields=FIELD_NAMES)


def expected(count: int, time_format: TimeFormat) -> dict[int, object]:
    """The JSON records of the same config, by index (the well-formed ones)."""
    config = GeneratorConfig(count=count, seed=3, malformed_ratio=0.1, time_format=time_format)
    batch = generate(config)
    return {
        i: msgspec.json.decode(v) for i, v in enumerate(batch.values) if i not in batch.malformed
    }


@pytest.mark.parametrize("encoding", [Encoding.AVRO, Encoding.PROTOBUF])
@pytest.mark.parametrize("time_format", [TimeFormat.EPOCH_MS, TimeFormat.ISO8601])
def test_bare_records_decode_with_the_schema_file(
    encoding: Encoding, time_format: TimeFormat, tmp_path: Path
) -> None:
    path = tmp_path / "schema"
    path.write_text(reference_schema(encoding, time_format))
    config = GeneratorConfig(
        count=300, seed=3, malformed_ratio=0.1, time_format=time_format, encoding=encoding
    )
    batch = generate(config)
    options = TaskOptions(input_format=InputFormat(encoding.value), schema_file=str(path))
    decoded = binary_decoder_for(plan=PLAN, options=options, schemas=None).decode(batch.values)
    assert set(decoded.bad) == set(batch.malformed) and batch.malformed
    json_records = expected(300, time_format)
    for row in decoded.frame.to_dicts():
        assert {k: v for k, v in row.items() if k != ROW} == json_records[row[ROW]]


@pytest.mark.parametrize("encoding", [Encoding.AVRO, Encoding.PROTOBUF])
def test_framed_records_carry_the_schema_id(encoding: Encoding) -> None:
    config = GeneratorConfig(count=50, seed=1, encoding=encoding, schema_id=9)
    registry = FakeRegistry(
        {
            9: RegisteredSchema(
                encoding.value.upper(), reference_schema(encoding, config.time_format)
            )
        }
    )
    options = TaskOptions(input_format=InputFormat(encoding.value))
    decoder = binary_decoder_for(plan=PLAN, options=options, schemas=registry)
    decoded = decoder.decode(generate(config).values)
    assert decoded.bad == {} and decoded.frame.height == 50


def test_without_a_registry_gen_writes_the_schema_file(tmp_path: Path) -> None:
    from devtools.gen.schema_setup import with_schema
    from mars.config import Settings

    config = GeneratorConfig(count=1, encoding=Encoding.PROTOBUF)
    path = tmp_path / "S.proto"
    done = with_schema(config, Settings(), topic="S", schema_file=str(path))
    assert done.schema_id is None
    assert path.read_text() == reference_schema(Encoding.PROTOBUF, config.time_format)

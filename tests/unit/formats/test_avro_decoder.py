"""Avro records -> frames: schema file (bare payloads) and registry (framed), schema evolution,
NULL for missing fields, and every bad-record reason."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mars.engine.decode import ROW, FieldPlan
from mars.engine.errors import EngineError
from mars.formats.decoders import binary_decoder_for
from mars.formats.schema_registry import SchemaRegistryUnavailable
from mars.formats.wire import frame
from mars.tasks.spec import InputFormat, TaskOptions
from tests.unit.formats.format_helpers import (
    AVRO_V1,
    AVRO_V2,
    AVRO_V3,
    PROTO_V1,
    FakeRegistry,
    avro_payload,
    avro_schema,
    proto_schema,
)

PLAN = FieldPlan(
    fields=("timestamp", "sip", "bytes", "app", "$.meta.city"), numeric_fields=frozenset({"bytes"})
)
V1 = {"timestamp": 1, "sip": "a", "bytes": 10, "meta": {"city": "Xian"}}
V2 = {"timestamp": 2, "sip": "b", "bytes": 20, "meta": {"city": None}, "app": "qq"}
V3 = {"timestamp": 3, "sip": "c", "meta": {"city": "Wuhan"}, "app": "web"}


def registry_decoder(registry: FakeRegistry):  # type: ignore[no-untyped-def]
    options = TaskOptions(input_format=InputFormat.AVRO)
    return binary_decoder_for(plan=PLAN, options=options, schemas=registry)


def test_schema_file_reads_bare_payloads(tmp_path: Path) -> None:
    path = tmp_path / "flow.avsc"
    path.write_text(json.dumps(AVRO_V1))
    options = TaskOptions(input_format=InputFormat.AVRO, schema_file=str(path))
    decoder = binary_decoder_for(plan=PLAN, options=options, schemas=None)
    decoded = decoder.decode([avro_payload(AVRO_V1, V1), avro_payload(AVRO_V1, V1)])
    assert decoded.bad == {}
    assert decoded.frame.to_dicts()[0] == {
        ROW: 0,
        "timestamp": 1,
        "sip": "a",
        "bytes": 10,
        "app": None,
        "$.meta.city": "Xian",
    }


def test_old_and_new_writer_schemas_decode_in_one_batch() -> None:
    registry = FakeRegistry(
        {1: avro_schema(AVRO_V1), 2: avro_schema(AVRO_V2), 3: avro_schema(AVRO_V3)}
    )
    decoded = registry_decoder(registry).decode(
        [
            frame(1, avro_payload(AVRO_V1, V1)),
            frame(2, avro_payload(AVRO_V2, V2)),
            frame(3, avro_payload(AVRO_V3, V3)),
        ]
    )
    assert decoded.bad == {}
    rows = decoded.frame.drop(ROW).to_dicts()
    assert rows == [
        {"timestamp": 1, "sip": "a", "bytes": 10, "app": None, "$.meta.city": "Xian"},  # no app yet
        {"timestamp": 2, "sip": "b", "bytes": 20, "app": "qq", "$.meta.city": None},
        {"timestamp": 3, "sip": "c", "bytes": None, "app": "web", "$.meta.city": "Wuhan"},
    ]
    assert registry.calls == 3  # once per schema id


def test_schemas_are_fetched_once_per_id_across_batches() -> None:
    registry = FakeRegistry({1: avro_schema(AVRO_V1)})
    decoder = registry_decoder(registry)
    for _ in range(3):
        decoder.decode([frame(1, avro_payload(AVRO_V1, V1))] * 4)
    assert registry.calls == 1


def test_every_bad_record_has_its_reason() -> None:
    registry = FakeRegistry({1: avro_schema(AVRO_V1), 5: proto_schema(PROTO_V1)})
    good = frame(1, avro_payload(AVRO_V1, V1))
    not_a_number = {**AVRO_V1, "fields": [{"name": "bytes", "type": "string"}]}
    registry.schemas[6] = avro_schema(not_a_number)
    decoded = registry_decoder(
        registry
    ).decode(
        [
            good,
            frame(99, avro_payload(AVRO_V1, V1)),  # unknown schema id
            good[:-3],  # corrupt: cut short
            good + b"\x00\x00",  # corrupt: bytes after the record
            b"\x01" + good[1:],  # wrong magic byte
            b"\x00\x00",  # too short for the header
            frame(5, b"\x08\x01"),  # a Protobuf schema's id
            frame(6, avro_payload(not_a_number, {"bytes": "many"})),
            good,
        ]
    )
    assert list(decoded.frame[ROW]) == [0, 8]
    assert decoded.bad[1] == "unknown schema id 99 (the registry says 404)"
    assert decoded.bad[2].startswith("corrupt Avro record: ")
    assert decoded.bad[3] == "corrupt Avro record: 2 bytes after the record"
    assert decoded.bad[4].startswith("wrong magic byte 1")
    assert "shorter than the 5-byte Confluent header" in decoded.bad[5]
    assert decoded.bad[6] == "schema id 5 is a PROTOBUF schema; the task reads avro"
    assert decoded.bad[7].startswith("field 'bytes' must be a number")


def test_an_unreachable_registry_fails_the_batch_instead_of_dead_lettering() -> None:
    registry = FakeRegistry({1: avro_schema(AVRO_V1)})
    registry.down = True
    with pytest.raises(SchemaRegistryUnavailable):
        registry_decoder(registry).decode([frame(1, avro_payload(AVRO_V1, V1))])
    registry.down = False  # the retry succeeds
    assert registry_decoder(registry).decode([frame(1, avro_payload(AVRO_V1, V1))]).bad == {}


def test_logical_types_read_as_their_underlying_type(tmp_path: Path) -> None:
    schema = {
        "type": "record",
        "name": "T",
        "fields": [{"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}}],
    }
    path = tmp_path / "t.avsc"
    path.write_text(json.dumps(schema))
    options = TaskOptions(input_format=InputFormat.AVRO, schema_file=str(path))
    decoder = binary_decoder_for(plan=FieldPlan(fields=("ts",)), options=options, schemas=None)
    no_logical = {**schema, "fields": [{"name": "ts", "type": "long"}]}
    decoded = decoder.decode([avro_payload(no_logical, {"ts": 1_700_000_000_123})])
    assert decoded.frame["ts"].to_list() == [1_700_000_000_123]


def test_without_schema_file_or_registry_the_task_does_not_compile() -> None:
    with pytest.raises(EngineError, match=r"schema_registry\.url"):
        binary_decoder_for(
            plan=PLAN, options=TaskOptions(input_format=InputFormat.AVRO), schemas=None
        )


def test_a_task_reading_some_fields_skips_the_others() -> None:
    registry = FakeRegistry({1: avro_schema(AVRO_V1), 3: avro_schema(AVRO_V3)})
    options = TaskOptions(input_format=InputFormat.AVRO)
    plan = FieldPlan(fields=("sip", "bytes"))
    decoder = binary_decoder_for(plan=plan, options=options, schemas=registry)
    decoded = decoder.decode(
        [frame(1, avro_payload(AVRO_V1, V1)), frame(3, avro_payload(AVRO_V3, V3))]
    )
    assert decoded.frame.drop(ROW).to_dicts() == [
        {"sip": "a", "bytes": 10},
        {"sip": "c", "bytes": None},
    ]

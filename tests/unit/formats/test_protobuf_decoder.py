"""Protobuf records -> frames: schema file, message indexes, evolution, presence, bad records."""

from __future__ import annotations

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
    PROTO_V1,
    PROTO_V2,
    PROTO_V3,
    FakeRegistry,
    avro_schema,
    proto_payload,
    proto_schema,
)

PLAN = FieldPlan(
    fields=("timestamp", "sip", "bytes", "app", "$.meta.city"), numeric_fields=frozenset({"bytes"})
)
V1 = {"timestamp": 1, "sip": "a", "bytes": 10, "meta": {"city": "Xian"}}
V2 = {"timestamp": 2, "sip": "b", "bytes": 20, "meta": {}, "app": "qq"}
V3 = {"timestamp": 3, "sip": "c", "app": "web"}


def registry_decoder(registry: FakeRegistry):  # type: ignore[no-untyped-def]
    options = TaskOptions(input_format=InputFormat.PROTOBUF)
    return binary_decoder_for(plan=PLAN, options=options, schemas=registry)


def test_schema_file_reads_bare_payloads_of_the_first_or_named_message(tmp_path: Path) -> None:
    path = tmp_path / "flow.proto"
    path.write_text(PROTO_V1)
    options = TaskOptions(input_format=InputFormat.PROTOBUF, schema_file=str(path))
    decoded = binary_decoder_for(plan=PLAN, options=options, schemas=None).decode(
        [proto_payload(PROTO_V1, V1)]
    )
    assert decoded.frame.drop(ROW).to_dicts() == [
        {"timestamp": 1, "sip": "a", "bytes": 10, "app": None, "$.meta.city": "Xian"}
    ]
    named = TaskOptions(
        input_format=InputFormat.PROTOBUF, schema_file=str(path), protobuf_message="Other"
    )
    other = binary_decoder_for(plan=FieldPlan(fields=("x",)), options=named, schemas=None)
    assert other.decode([proto_payload(PROTO_V1, {"x": "y"}, (1,))]).frame["x"].to_list() == ["y"]


def test_old_and_new_writer_schemas_decode_in_one_batch() -> None:
    registry = FakeRegistry(
        {1: proto_schema(PROTO_V1), 2: proto_schema(PROTO_V2), 3: proto_schema(PROTO_V3)}
    )
    decoded = registry_decoder(registry).decode(
        [
            frame(1, proto_payload(PROTO_V1, V1), (0,)),
            frame(2, proto_payload(PROTO_V2, V2), (0,)),
            frame(3, proto_payload(PROTO_V3, V3), (0,)),
        ]
    )
    assert decoded.bad == {}
    assert decoded.frame.drop(ROW).to_dicts() == [
        {"timestamp": 1, "sip": "a", "bytes": 10, "app": None, "$.meta.city": "Xian"},
        # meta set, its optional city not: NULL
        {"timestamp": 2, "sip": "b", "bytes": 20, "app": "qq", "$.meta.city": None},
        # bytes removed from the schema: NULL; meta not set: NULL below it
        {"timestamp": 3, "sip": "c", "bytes": None, "app": "web", "$.meta.city": None},
    ]


def test_message_indexes_pick_nested_and_later_messages() -> None:
    registry = FakeRegistry({1: proto_schema(PROTO_V1)})
    options = TaskOptions(input_format=InputFormat.PROTOBUF)
    decoder = binary_decoder_for(
        plan=FieldPlan(fields=("x", "city")), options=options, schemas=registry
    )
    decoded = decoder.decode(
        [
            frame(1, proto_payload(PROTO_V1, {"x": "y"}, (1,)), (1,)),
            frame(1, proto_payload(PROTO_V1, {"city": "Xian"}, (0, 0)), (0, 0)),
            frame(1, b"", (4,)),
        ]
    )
    assert decoded.frame.drop(ROW).to_dicts() == [
        {"x": "y", "city": None},
        {"x": None, "city": "Xian"},
    ]
    assert decoded.bad == {2: "schema id 1: message index [4] names no message (level 0 has 2)"}


def test_every_bad_record_has_its_reason() -> None:
    registry = FakeRegistry({1: proto_schema(PROTO_V1), 5: avro_schema(AVRO_V1)})
    good = frame(1, proto_payload(PROTO_V1, V1), (0,))
    decoded = registry_decoder(registry).decode(
        [
            good,
            frame(42, proto_payload(PROTO_V1, V1), (0,)),
            frame(1, b"\xff" * 11, (0,)),
            b"\x07" + good[1:],
            frame(5, b"", (0,)),
            good,
        ]
    )
    assert list(decoded.frame[ROW]) == [0, 5]
    assert decoded.bad[1] == "unknown schema id 42 (the registry says 404)"
    assert decoded.bad[2].startswith("corrupt Protobuf record: ")
    assert decoded.bad[3].startswith("wrong magic byte 7")
    assert decoded.bad[4] == "schema id 5 is a AVRO schema; the task reads protobuf"


def test_an_unreachable_registry_fails_the_batch() -> None:
    registry = FakeRegistry({1: proto_schema(PROTO_V1)})
    registry.down = True
    with pytest.raises(SchemaRegistryUnavailable):
        registry_decoder(registry).decode([frame(1, proto_payload(PROTO_V1, V1), (0,))])


def test_a_proto_that_does_not_compile_names_the_problem(tmp_path: Path) -> None:
    path = tmp_path / "bad.proto"
    path.write_text('syntax = "proto3"; message M { int64 = 1; }')
    options = TaskOptions(input_format=InputFormat.PROTOBUF, schema_file=str(path))
    with pytest.raises(EngineError, match="does not compile"):
        binary_decoder_for(plan=PLAN, options=options, schemas=None)

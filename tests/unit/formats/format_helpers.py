"""Schemas, payload writers and an in-memory registry for the format tests."""

from __future__ import annotations

import io
import json
import struct
from typing import Any

import fastavro
from hypothesis import strategies as st

from mars.formats.protobuf_schema import compile_proto, message_at, message_class
from mars.formats.schema_registry import (
    RegisteredSchema,
    SchemaRegistryUnavailable,
    UnknownSchemaId,
)

# Three versions of one record: v2 adds `app` with a default, v3 removes `bytes`.
AVRO_V1: dict[str, Any] = {
    "type": "record",
    "name": "Flow",
    "fields": [
        {"name": "timestamp", "type": "long"},
        {"name": "sip", "type": "string"},
        {"name": "bytes", "type": "long"},
        {
            "name": "meta",
            "type": {
                "type": "record",
                "name": "Meta",
                "fields": [{"name": "city", "type": ["null", "string"], "default": None}],
            },
        },
    ],
}
AVRO_V2 = {
    **AVRO_V1,
    "fields": [*AVRO_V1["fields"], {"name": "app", "type": "string", "default": "web"}],
}
AVRO_V3 = {**AVRO_V2, "fields": [f for f in AVRO_V2["fields"] if f["name"] != "bytes"]}

PROTO_V1 = """syntax = "proto3";
package test.flows;
message Flow {
  int64 timestamp = 1;
  string sip = 2;
  int64 bytes = 3;
  Meta meta = 4;
  message Meta { optional string city = 1; }
}
message Other { string x = 1; }
"""
# A schema that imports another (a schema reference named "geo/common.proto"): its message and
# enum, and a well-known type, which needs no reference.
PROTO_COMMON = """syntax = "proto3";
package geo;
message Place { string city = 1; }
enum Kind { KIND_UNKNOWN = 0; VOICE = 1; VIDEO = 2; }
"""
PROTO_CALL = """syntax = "proto3";
package calls;
import "geo/common.proto";
import "google/protobuf/timestamp.proto";
message Call {
  string sip = 1;
  geo.Place place = 2;
  geo.Kind kind = 3;
  google.protobuf.Timestamp at = 4;
}
"""
PROTO_CALL_IMPORTS = (("geo/common.proto", PROTO_COMMON),)
CALL_PLAN_FIELDS = ("sip", "$.place.city", "kind", "$.at.seconds")
CALL = {"sip": "a", "place": {"city": "Xian"}, "kind": 2, "at": {"seconds": 7}}
CALL_ROW = {"sip": "a", "$.place.city": "Xian", "kind": "VIDEO", "$.at.seconds": 7}

PROTO_V2 = PROTO_V1.replace("  Meta meta = 4;\n", "  Meta meta = 4;\n  string app = 5;\n")
PROTO_V3 = PROTO_V2.replace("  int64 bytes = 3;\n", "  reserved 3;\n")


def avro_payload(schema: dict[str, Any], record: dict[str, Any]) -> bytes:
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, fastavro.parse_schema(schema), record)
    return buffer.getvalue()


def corrupt_some(draw: st.DrawFn, payloads: list[bytes]) -> None:
    """Up to two of `payloads` corrupted in place: cut, grown, or a byte changed."""
    for _ in range(draw(st.integers(0, 2))):
        at = draw(st.integers(0, len(payloads) - 1))
        payload = payloads[at]
        how = draw(st.sampled_from(["cut", "grow", "flip"]))
        if how == "cut":
            payloads[at] = payload[: draw(st.integers(0, max(len(payload) - 1, 0)))]
        elif how == "grow":
            payloads[at] = payload + draw(st.binary(min_size=1, max_size=3))
        elif payload:
            i = draw(st.integers(0, len(payload) - 1))
            payloads[at] = (
                payload[:i] + struct.pack("B", draw(st.integers(0, 255))) + payload[i + 1 :]
            )


def proto_payload(
    text: str,
    record: dict[str, Any],
    indexes: tuple[int, ...] = (0,),
    imports: tuple[tuple[str, str], ...] = (),
) -> bytes:
    message_type = message_class(message_at(compile_proto(text, imports), indexes))
    return bytes(message_type(**record).SerializeToString())


class FakeRegistry:
    """A `SchemaSource` of fixed schemas; `down` makes it unreachable."""

    def __init__(self, schemas: dict[int, RegisteredSchema]) -> None:
        self.schemas = schemas
        self.down = False
        self.calls = 0

    def schema_by_id(self, schema_id: int) -> RegisteredSchema:
        self.calls += 1
        if self.down:
            raise SchemaRegistryUnavailable("connection refused")
        if schema_id not in self.schemas:
            raise UnknownSchemaId(f"unknown schema id {schema_id} (the registry says 404)")
        return self.schemas[schema_id]


def avro_schema(schema: dict[str, Any]) -> RegisteredSchema:
    return RegisteredSchema("AVRO", json.dumps(schema))


def proto_schema(text: str, imports: tuple[tuple[str, str], ...] = ()) -> RegisteredSchema:
    return RegisteredSchema("PROTOBUF", text, imports)

"""The reference tuples as Avro or Protobuf records: the schema of the 20 fields, and an
encoder from the generator's JSON records to bare payloads or Confluent-framed ones.

A field is a `long` / `int64` when its pool holds numbers and a `string` otherwise; the
timestamp is a `long` (epoch s or ms) or, for ISO 8601, a `string`. A malformed record
(`devtools.gen.malformed`) becomes bytes no schema decodes: eleven 0xFF bytes (a varint
longer than any), after the header when records are framed, so a framed one keeps its schema id
and is dead-lettered as corrupt bytes.
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from typing import Any

import fastavro
import msgspec

from devtools.gen.config import Encoding
from devtools.gen.fields import TIMESTAMP_FIELD, field_pools
from mars.formats.protobuf_schema import compile_proto, message_at, message_class
from mars.formats.wire import frame
from mars.tasks.spec import TimeFormat

BINARY_ENCODINGS = (Encoding.AVRO, Encoding.PROTOBUF)
SCHEMA_TYPES = {Encoding.AVRO: "AVRO", Encoding.PROTOBUF: "PROTOBUF"}
RECORD_NAME = "Tuple"
CORRUPT_PAYLOAD = b"\xff" * 11


def reference_fields(time_format: TimeFormat) -> list[tuple[str, bool]]:
    """(name, is a number) of the 20 fields in record order."""
    fields = [(TIMESTAMP_FIELD, time_format is not TimeFormat.ISO8601)]
    for pool in field_pools(sip_cardinality=1):
        fields.append((pool.name, all(isinstance(v, int) for v in pool.values)))
    return fields


def reference_schema(encoding: Encoding, time_format: TimeFormat) -> str:
    """The writer schema of the reference tuples: Avro JSON or .proto source."""
    fields = reference_fields(time_format)
    if encoding is Encoding.AVRO:
        schema = {
            "type": "record",
            "name": RECORD_NAME,
            "namespace": "mars.gen",
            "fields": [
                {"name": name, "type": "long" if number else "string"} for name, number in fields
            ],
        }
        return json.dumps(schema, separators=(",", ":"))
    if encoding is Encoding.PROTOBUF:
        lines = ['syntax = "proto3";', "package mars.gen;", f"message {RECORD_NAME} {{"]
        for tag, (name, number) in enumerate(fields, start=1):
            lines.append(f"  {'int64' if number else 'string'} {name} = {tag};")
        lines.append("}")
        return "\n".join(lines) + "\n"
    raise ValueError(f"{encoding} has no schema")


class BinaryEncoder:
    """JSON records of the reference tuples -> Avro or Protobuf records of `schema`."""

    def __init__(self, encoding: Encoding, schema: str, *, schema_id: int | None) -> None:
        self._schema_id = schema_id
        self._encoding = encoding
        if encoding is Encoding.AVRO:
            self._avro = fastavro.parse_schema(json.loads(schema))
        else:
            self._message = message_class(message_at(compile_proto(schema), (0,)))
        self._indexes = (0,) if encoding is Encoding.PROTOBUF else None

    def encode(self, json_values: Sequence[bytes], malformed: Sequence[int] = ()) -> list[bytes]:
        """One record per JSON record; the positions in `malformed` become corrupt records."""
        bad = frozenset(malformed)
        out = []
        for position, value in enumerate(json_values):
            payload = (
                CORRUPT_PAYLOAD if position in bad else self.payload(msgspec.json.decode(value))
            )
            out.append(self.framed(payload))
        return out

    def payload(self, record: dict[str, Any]) -> bytes:
        if self._encoding is Encoding.AVRO:
            buffer = io.BytesIO()
            fastavro.schemaless_writer(buffer, self._avro, record)
            return buffer.getvalue()
        return bytes(self._message(**record).SerializeToString())

    def framed(self, payload: bytes) -> bytes:
        if self._schema_id is None:
            return payload
        return frame(self._schema_id, payload, self._indexes)

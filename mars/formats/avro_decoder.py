"""Avro payloads -> a task's fields, with fastavro.

The writer's schema decodes each record (Avro needs it: the bytes carry no field names); the
task's fields are then read by name from the decoded record with the JSON decoder's paths
(`a.b` into nested records and maps, `a[0]` into arrays), so a field the writer's schema lacks
is NULL: records of older and newer schemas decode alike. Logical types are read as their
underlying type (a `timestamp-millis` is its long, epoch ms), as a JSON producer would send it.
"""

from __future__ import annotations

import io
import json
import struct
from collections.abc import Callable
from functools import lru_cache
from typing import Any

import fastavro
from fastavro.types import Schema

from mars.engine.json_paths import PathReader
from mars.formats.binary_decoder import PayloadReader
from mars.formats.errors import CorruptRecord, SchemaProblem

_DECODE_ERRORS = (
    EOFError,
    ValueError,
    IndexError,
    KeyError,
    TypeError,
    OverflowError,
    UnicodeDecodeError,
    struct.error,
    StopIteration,
)


def parse_avro_schema(text: str) -> Schema:
    """The parsed writer schema of Avro JSON `text`, logical types dropped; `SchemaProblem`
    when it is not a valid Avro record schema."""
    return _parse(text)


@lru_cache(maxsize=256)
def _parse(text: str) -> Schema:
    try:
        schema = _without_logical_types(json.loads(text))
        parsed = fastavro.parse_schema(schema)
    except (ValueError, TypeError, KeyError, fastavro.schema.SchemaParseException) as error:
        raise SchemaProblem(f"not a valid Avro schema: {error}") from None
    if not isinstance(parsed, dict) or parsed.get("type") != "record":
        raise SchemaProblem("the Avro schema is not a record schema")
    return parsed


def _without_logical_types(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: _without_logical_types(v) for k, v in schema.items() if k != "logicalType"}
    if isinstance(schema, list):
        return [_without_logical_types(item) for item in schema]
    return schema


class AvroPayloadReader:
    """Reads the plan's fields out of payloads written with one schema."""

    def __init__(self, schema: Schema, fields: tuple[str, ...]) -> None:
        self._schema = schema
        self._paths = PathReader(fields)

    def read(self, payload: bytes | memoryview) -> dict[str, Any]:
        buffer = io.BytesIO(payload)
        try:
            record = fastavro.schemaless_reader(buffer, self._schema, None)
        except _DECODE_ERRORS as error:
            raise CorruptRecord(f"corrupt Avro record: {type(error).__name__}: {error}") from None
        left = len(payload) - buffer.tell()
        if left:
            raise CorruptRecord(f"corrupt Avro record: {left} bytes after the record")
        assert isinstance(record, dict)
        return self._paths.values_of_object(record)


def avro_reader_factory(fields: tuple[str, ...]) -> Callable[[str], PayloadReader]:
    """Schema text -> the reader of `fields` for payloads written with it."""

    def reader(text: str) -> PayloadReader:
        return AvroPayloadReader(parse_avro_schema(text), fields)

    return reader

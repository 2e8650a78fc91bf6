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
from collections.abc import Sequence
from functools import cached_property, lru_cache
from typing import Any

import fastavro
from fastavro.types import Schema

from mars.engine.json_paths import PathReader
from mars.engine.native_json import NativeColumns
from mars.formats.errors import CorruptRecord, SchemaProblem
from mars.formats.native_avro import NativeAvroReader
from mars.tasks.field_paths import field_path

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
    """Reads the plan's fields out of payloads written with one schema: a batch at a time by
    the native decoder when it takes the batch (`mars.formats.native_avro`), else record by
    record with fastavro."""

    def __init__(self, schema: Schema, fields: tuple[str, ...], *, native: bool = True) -> None:
        """`native=False`: fastavro only (the reference the native decoder is tested against)."""
        self._schema = schema
        self._native_wanted = native
        self._projection = _projection(schema, fields)
        self._paths = PathReader(fields)
        self._native = NativeAvroReader.for_schema(schema, fields) if native else None

    @cached_property
    def schema_key(self) -> str:
        """The writer schema's Parsing Canonical Form (Avro specification): what reading its
        bytes depends on (names, types, field order), without docs, defaults or aliases."""
        return str(fastavro.schema.to_parsing_canonical_form(self._schema))

    def with_fields(self, fields: tuple[str, ...]) -> AvroPayloadReader:
        """A reader of the same writer schema reading `fields`."""
        return AvroPayloadReader(self._schema, fields, native=self._native_wanted)

    def native_columns(self, values: Sequence[bytes], header: bytes) -> NativeColumns | None:
        """The batch's columns, each payload after `header`, decoded natively; None when
        declined or not built."""
        return None if self._native is None else self._native.columns(values, header)

    def read(self, payload: bytes | memoryview) -> dict[str, Any]:
        buffer = io.BytesIO(payload)
        try:
            record = fastavro.schemaless_reader(buffer, self._schema, self._projection)
        except EOFError:  # (fastavro's message names its buffer object: an address)
            raise CorruptRecord("corrupt Avro record: it ends inside a value") from None
        except _DECODE_ERRORS as error:
            raise CorruptRecord(f"corrupt Avro record: {type(error).__name__}: {error}") from None
        left = len(payload) - buffer.tell()
        if left:
            raise CorruptRecord(f"corrupt Avro record: {left} bytes after the record")
        assert isinstance(record, dict)
        return self._paths.values_of_object(record)


def _projection(schema: Schema, fields: tuple[str, ...]) -> Schema | None:
    """A reader schema of the writer's top-level fields that `fields` read, so fastavro skips
    the others instead of building them (about 1.2x on the reference tuples); None when the
    kept fields use a named type defined in a skipped one."""
    assert isinstance(schema, dict)
    needed = {str(field_path(name)[0]) for name in fields}
    kept = [field for field in schema["fields"] if field["name"] in needed]
    if len(kept) == len(schema["fields"]):
        return None
    try:
        return fastavro.parse_schema({**schema, "fields": kept})
    except (ValueError, TypeError, KeyError, fastavro.schema.SchemaParseException):
        return None

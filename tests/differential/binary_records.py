"""A differential case's records as Avro or Protobuf, with a schema file (no registry needed).

Cases drawn for these formats read no nested path, so `m` is left out of the schema. The
writer schema holds `ts`, `k1`, `k2`, `v`, `f` and `s`, each nullable: a field missing from
the JSON record is written as NULL, which the task reads exactly as the missing JSON field.
Avro's `ts` is a union of long and string (an unreadable event time is the string
"yesterday", as in JSON); Protobuf's is an `optional int64`, or `optional string` for ISO
times. A record that has no such form (not JSON, not an object, a string time in a numeric
Protobuf field) becomes corrupt bytes. Corrupt bytes are bad before WHERE is read, so the
case's own copy of such a record (the one the oracle reads) is made not JSON by `carried`:
bad whatever WHERE says, for both.
"""

from __future__ import annotations

import io
import json
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

import fastavro

from devtools.gen.binary_encoding import CORRUPT_PAYLOAD
from mars.formats.protobuf_schema import compile_proto, message_at, message_class

BINARY_FORMATS = ("avro", "protobuf")
_FIELDS = (("k1", "string"), ("k2", "long"), ("v", "long"), ("f", "double"), ("s", "string"))
_PROTO_TYPES = {"string": "string", "long": "int64", "double": "double"}


def schema_text(input_format: str, unit: str) -> str:
    if input_format == "avro":
        fields = [{"name": "ts", "type": ["null", "long", "string"], "default": None}]
        fields += [{"name": n, "type": ["null", t], "default": None} for n, t in _FIELDS]
        return json.dumps({"type": "record", "name": "Row", "fields": fields})
    ts_type = "string" if unit == "iso" else "int64"
    lines = ['syntax = "proto3";', "message Row {", f"  optional {ts_type} ts = 1;"]
    for tag, (name, kind) in enumerate(_FIELDS, start=2):
        lines.append(f"  optional {_PROTO_TYPES[kind]} {name} = {tag};")
    return "\n".join([*lines, "}"]) + "\n"


@cache
def schema_file(input_format: str, unit: str) -> str:
    """The schema's path: a file the local mappers and the API can read."""
    folder = Path(tempfile.mkdtemp(prefix="mars-differential-"))
    path = folder / f"row-{unit}.{'avsc' if input_format == 'avro' else 'proto'}"
    path.write_text(schema_text(input_format, unit), encoding="utf-8")
    return str(path)


NO_FORM = b"no form in this format"  # not JSON: bad for the oracle whatever WHERE says


def carried(value: bytes, input_format: str, unit: str) -> bytes:
    """`value` as a case over `input_format` keeps it: unchanged, or `NO_FORM` when the
    format cannot carry it (a string event time in Protobuf's int64 `ts`), since Mars sees
    corrupt bytes there and the oracle must count it bad even when WHERE would drop it."""
    if input_format != "protobuf" or unit == "iso":
        return value
    try:
        record = json.loads(value)
    except ValueError:
        return value
    if isinstance(record, dict) and isinstance(record.get("ts"), str):
        return NO_FORM
    return value


def encode(value: bytes, input_format: str, unit: str) -> bytes:
    """The JSON record `value` in `input_format`, or corrupt bytes when it has no such form."""
    try:
        record = json.loads(value)
    except ValueError:
        return CORRUPT_PAYLOAD
    if not isinstance(record, dict):
        return CORRUPT_PAYLOAD
    row = {name: record.get(name) for name in ("ts", *(n for n, _ in _FIELDS))}
    if input_format == "avro":
        buffer = io.BytesIO()
        fastavro.schemaless_writer(buffer, _avro_schema(unit), row)
        return buffer.getvalue()
    if unit != "iso" and isinstance(row["ts"], str):
        return CORRUPT_PAYLOAD
    present: dict[str, Any] = {k: v for k, v in row.items() if v is not None}
    return bytes(_message(unit)(**present).SerializeToString())


@cache
def _avro_schema(unit: str) -> Any:
    return fastavro.parse_schema(json.loads(schema_text("avro", unit)))


@cache
def _message(unit: str) -> Any:
    return message_class(message_at(compile_proto(schema_text("protobuf", unit)), (0,)))

"""A differential case's records as Avro or Protobuf, with a schema file (no registry needed).

The writer schema holds `ts`, `k1`, `k2`, `v`, `f`, `s` and the nested `m`, each nullable: a
field missing from the JSON record is written as NULL, which the task reads exactly as the
missing JSON field. Avro's `ts` is a union of long and string (an unreadable event time is the
string "yesterday", as in JSON); Protobuf's is an `optional int64`, or `optional string` for
ISO times. `m` is what the nested paths read: `u` (the user: `name`, `id`), `tags` and `w`. In
Avro a nullable record of nullable fields (`tags` a nullable array of nullable strings); in
Protobuf a message (so an unset one is NULL) of `optional` fields, `u` a message too and `tags`
a repeated string (no NULL elements; an empty one reads NULL at `[0]`, as a null JSON array).

A record is written as the schema carries it (`_row`): a value of another kind than its field
(a string time in Protobuf's int64 `ts`, a number where `m` or `m.u` is a record, a list in
`m.u.id`, a NULL tag in Protobuf) is written as NULL or left out, as are the parts of `m` no
path reads (`other`). Where that changes the value of a field the case reads (every top-level
field, and the nested paths its task reads), or the JSON record is bad for that path, the
record has no form in the format; so is a record that is not a JSON object. Its payload is
corrupt bytes, bad before WHERE is read, so the case's own copy of it (the one the oracle
reads) is made not JSON by `carried`: bad whatever WHERE says, for both.
"""

from __future__ import annotations

import io
import json
import tempfile
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

import fastavro

from devtools.gen.binary_encoding import CORRUPT_PAYLOAD
from mars.formats.protobuf_schema import compile_proto, message_at, message_class
from mars.tasks.field_paths import FieldPath, read_path_text

BINARY_FORMATS = ("avro", "protobuf")
_FIELDS = (("k1", "string"), ("k2", "long"), ("v", "long"), ("f", "double"), ("s", "string"))
_PROTO_TYPES = {"string": "string", "long": "int64", "double": "double"}
_KINDS: dict[str, type | tuple[type, ...]] = {"string": str, "long": int, "double": float}
_TOP_LEVEL = ("ts", *(name for name, _ in _FIELDS))


def _nullable(kind: object) -> dict[str, object]:
    return {"type": ["null", kind], "default": None}


_AVRO_USER = {
    "type": "record",
    "name": "User",
    "fields": [{"name": "name", **_nullable("string")}, {"name": "id", **_nullable("long")}],
}
_AVRO_NESTED = {
    "type": "record",
    "name": "Nested",
    "fields": [
        {"name": "u", **_nullable(_AVRO_USER)},
        {"name": "tags", **_nullable({"type": "array", "items": ["null", "string"]})},
        {"name": "w", **_nullable("long")},
    ],
}
_PROTO_NESTED = """\
message User {
  optional string name = 1;
  optional int64 id = 2;
}
message Nested {
  optional User u = 1;
  repeated string tags = 2;
  optional int64 w = 3;
}
"""


def schema_text(input_format: str, unit: str) -> str:
    if input_format == "avro":
        fields = [{"name": "ts", "type": ["null", "long", "string"], "default": None}]
        fields += [{"name": n, **_nullable(t)} for n, t in _FIELDS]
        fields.append({"name": "m", **_nullable(_AVRO_NESTED)})
        return json.dumps({"type": "record", "name": "Row", "fields": fields})
    ts_type = "string" if unit == "iso" else "int64"
    lines = ['syntax = "proto3";', "message Row {", f"  optional {ts_type} ts = 1;"]
    for tag, (name, kind) in enumerate(_FIELDS, start=2):
        lines.append(f"  optional {_PROTO_TYPES[kind]} {name} = {tag};")
    lines.append(f"  optional Nested m = {len(_FIELDS) + 2};")
    return "\n".join([*lines, "}", _PROTO_NESTED])


@cache
def schema_file(input_format: str, unit: str) -> str:
    """The schema's path: a file the local mappers and the API can read."""
    folder = Path(tempfile.mkdtemp(prefix="mars-differential-"))
    path = folder / f"row-{unit}.{'avsc' if input_format == 'avro' else 'proto'}"
    path.write_text(schema_text(input_format, unit), encoding="utf-8")
    return str(path)


NO_FORM = b"no form in this format"  # not JSON: bad for the oracle whatever WHERE says


def carried(value: bytes, input_format: str, unit: str, paths: Iterable[str]) -> bytes:
    """`value` as a case over `input_format` whose task reads the nested `paths` keeps it:
    unchanged, or `NO_FORM` when the format cannot carry a value the task reads (Mars sees
    corrupt bytes there, and the oracle must count it bad even when WHERE would drop it)."""
    if input_format == "json":
        return value
    record = _object(value)
    if record is None:
        return value  # not an object: bad for both already
    read = (*_TOP_LEVEL_PATHS, *(read_path_text(path) for path in paths))
    return NO_FORM if _loses(record, _row(record, input_format, unit), read) else value


def encode(value: bytes, input_format: str, unit: str) -> bytes:
    """The JSON record `value` in `input_format`, or corrupt bytes when it has no such form
    (nested values of another kind are written as NULL: `carried` decides about those)."""
    record = _object(value)
    if record is None:
        return CORRUPT_PAYLOAD
    row = _row(record, input_format, unit)
    if _loses(record, row, _TOP_LEVEL_PATHS):
        return CORRUPT_PAYLOAD
    if input_format == "avro":
        buffer = io.BytesIO()
        fastavro.schemaless_writer(buffer, _avro_schema(unit), row)
        return buffer.getvalue()
    return bytes(_message(unit)(**_present(row)).SerializeToString())


_TOP_LEVEL_PATHS: tuple[FieldPath, ...] = tuple((name,) for name in _TOP_LEVEL)


def _object(value: bytes) -> dict[str, Any] | None:
    try:
        record = json.loads(value)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def _row(record: dict[str, Any], input_format: str, unit: str) -> dict[str, Any]:
    """What the writer schema holds of `record`: each value of its field's kind, else NULL."""
    ts_kinds = (int, str) if input_format == "avro" else str if unit == "iso" else int
    row = {"ts": _of(record.get("ts"), ts_kinds)}
    row |= {name: _of(record.get(name), _KINDS[kind]) for name, kind in _FIELDS}
    nested = record.get("m")
    if not isinstance(nested, dict):
        return row | {"m": None}
    user, tags = nested.get("u"), nested.get("tags")
    kept: list[str | None] | None = None
    if isinstance(tags, list):  # Protobuf has no NULL element
        element = (str, type(None)) if input_format == "avro" else str
        kept = [tag for tag in tags if isinstance(tag, element)]
    return row | {
        "m": {
            "u": (
                {"name": _of(user.get("name"), str), "id": _of(user.get("id"), int)}
                if isinstance(user, dict)
                else None
            ),
            "tags": kept,
            "w": _of(nested.get("w"), int),
        }
    }


def _of(value: Any, kind: type | tuple[type, ...]) -> Any:
    return value if isinstance(value, kind) and not isinstance(value, bool) else None


_WRONG_KIND = object()  # a path through or onto a value of the wrong kind: a bad record


def _at(record: Any, path: FieldPath) -> Any:
    """The value a task reads at `path` (docs/semantics.md, "Nested fields"): NULL when missing
    or past the end, `_WRONG_KIND` where the record is bad for the path."""
    value = record
    for step in path:
        if value is None:
            return None
        if isinstance(step, int):
            if not isinstance(value, list):
                return _WRONG_KIND
            value = value[step] if step < len(value) else None
        elif isinstance(value, dict):
            value = value.get(step)
        else:
            return _WRONG_KIND
    return _WRONG_KIND if isinstance(value, dict | list) else value


def _loses(record: dict[str, Any], row: dict[str, Any], paths: Iterable[FieldPath]) -> bool:
    """Whether `row` reads otherwise than `record` at one of `paths`, or `record` is bad there."""
    for path in paths:
        value = _at(record, path)
        if value is _WRONG_KIND or value != _at(row, path):
            return True
    return False


def _present(row: dict[str, Any]) -> dict[str, Any]:
    """`row` without its NULLs, at every level: a message's unset fields."""
    return {k: _present(v) if isinstance(v, dict) else v for k, v in row.items() if v is not None}


@cache
def _avro_schema(unit: str) -> Any:
    return fastavro.parse_schema(json.loads(schema_text("avro", unit)))


@cache
def _message(unit: str) -> Any:
    return message_class(message_at(compile_proto(schema_text("protobuf", unit)), (0,)))

"""Avro payloads read by the Rust extension straight into typed columns
(`mars_native.AvroColumnsDecoder`, native/src/avro_columns.rs).

fastavro (`mars.formats.avro_decoder`) builds a dict per record; the native decoder walks the
payloads with the writer schema and appends only the values the task reads to typed columns,
which become Polars columns as the native JSON decoder's do. It is built only for the plain
case, every path running through records (and unions with null) to a scalar or to a field the
writer lacks (NULL); otherwise `for_schema` gives None and fastavro reads every batch. It
declines (None) a batch holding anything but well-formed payloads of that schema, and fastavro,
the reference, then decodes the batch and gives the bad records their reasons. So a batch gives
the same frame either way; tests/unit/formats/test_native_avro.py checks it on random records.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mars.formats.native_payloads import NativePayloadReader
from mars.native import mars_native
from mars.tasks.field_paths import Step, field_path

_SCALARS = ("null", "boolean", "int", "long", "float", "double", "string")
_SKIPPED = ("bytes",)  # skipped when no column reads them; a column on them is not plain

# A writer schema node for the decoder: (type name, argument, columns whose path ends here).
AvroNode = tuple[str, Any, list[int]]
# The columns still walking at a node: (column number, the steps left of its path).
_Wanted = list[tuple[int, tuple[Step, ...]]]


class _NotPlain(Exception):
    """The schema and paths are not the case the native decoder takes."""


class NativeAvroReader(NativePayloadReader):
    """The native decoder of one Avro writer schema's payloads, reading `fields`."""

    @classmethod
    def for_schema(cls, schema: Any, fields: Sequence[str]) -> NativeAvroReader | None:
        """The reader of `schema` (fastavro's parsed writer schema), or None when the extension
        is not built or the case is not plain."""
        if mars_native is None or not fields:
            return None
        wanted: _Wanted = [(n, field_path(name)) for n, name in enumerate(fields)]
        try:
            root = _node(schema, wanted, {}, frozenset())
        except _NotPlain:
            return None
        return cls(mars_native.AvroColumnsDecoder(root, len(fields)), tuple(fields))


def _node(
    schema: Any, wanted: _Wanted, named: dict[str, Any], open_names: frozenset[str]
) -> AvroNode:
    """The node of `schema` with the columns of `wanted` placed; `named`: the named types
    defined so far (fastavro's parsed schema refers to a type by its full name after its
    definition); `open_names`: the records being defined around this node."""
    if isinstance(schema, list):  # a union: each branch reads the same paths
        branches = tuple(_node(branch, wanted, named, open_names) for branch in schema)
        return ("union", branches, [])
    if isinstance(schema, str):
        if schema not in named:
            return _primitive(schema, wanted)
        if schema in open_names:
            raise _NotPlain  # a recursive type: the decoder's tree would not end
        return _node(named[schema], wanted, named, open_names)
    kind = schema["type"]
    if not isinstance(kind, str) or kind in _SCALARS or kind in _SKIPPED or kind in named:
        return _node(kind, wanted, named, open_names)  # {"type": "long"}, {"type": [..]}
    name = schema.get("name")
    if name is not None:
        named[name] = schema
    if kind == "record":
        inner = open_names if name is None else open_names | {name}
        return _record(schema["fields"], wanted, named, inner)
    return _other(kind, schema, wanted, named, open_names)


def _primitive(kind: str, wanted: _Wanted) -> AvroNode:
    here = [n for n, rest in wanted if not rest]
    if kind not in _SCALARS and kind not in _SKIPPED:
        raise _NotPlain
    if (here and kind in _SKIPPED) or (len(here) < len(wanted) and kind != "null"):
        raise _NotPlain  # a column on bytes, or a path through a scalar (bad records)
    return (kind, None, here)


def _record(
    fields: list[dict[str, Any]], wanted: _Wanted, named: dict[str, Any], inner: frozenset[str]
) -> AvroNode:
    if any(not rest for _, rest in wanted):
        raise _NotPlain  # a column on a record: a nested value where a scalar is needed
    if any(not isinstance(rest[0], str) for _, rest in wanted):
        raise _NotPlain  # an index into a record
    return (
        "record",
        tuple(
            _node(
                field["type"],
                [(n, rest[1:]) for n, rest in wanted if rest[0] == field["name"]],
                named,
                inner,
            )
            for field in fields
        ),
        [],
    )


def _other(
    kind: str,
    schema: dict[str, Any],
    wanted: _Wanted,
    named: dict[str, Any],
    open_names: frozenset[str],
) -> AvroNode:
    """An enum (a scalar: its symbol), or a fixed, array or map that no column reads."""
    here = [n for n, rest in wanted if not rest]
    if len(here) < len(wanted):
        raise _NotPlain  # a path into an array, a map, an enum or a fixed
    if kind == "enum":
        return ("enum", list(schema["symbols"]), here)
    if here:
        raise _NotPlain  # a column on an array, a map or a fixed
    if kind == "fixed":
        return ("fixed", int(schema["size"]), [])
    if kind in ("array", "map"):
        item = schema["items" if kind == "array" else "values"]
        return (kind, _node(item, [], named, open_names), [])
    raise _NotPlain

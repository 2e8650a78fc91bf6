"""Reading the fields and nested paths a task needs from JSON records, with msgspec.

The task's columns (`mars.tasks.field_paths`: `sip`, `$.payload.user.id`, `$.m.tags[0]`) form
a tree of keys. Every inner node of that tree whose children are all keys, and which is not
itself a column, becomes a msgspec Struct generated for exactly those keys (`None` when the
record holds null or lacks it), and so does every array node read only by index (an
array-like Struct of its first elements: those read, the ones before them kept unparsed, the
rest skipped); the others (columns, and nodes read both by key and by index) are decoded as
plain values. So msgspec skips, in C, every key and element no path reads, at every level, and
a record costs one Struct per object or array on the paths plus the values read. A column is
then taken column-wise from its parent's column.

Semantics (docs/semantics.md, "Nested fields"): a missing key, a too-short array or a null on
the way gives NULL; a value of the wrong kind on the way (a key of a non-object, an index of a
non-array) gives a `BadValue` whose reason names the path: the record is bad for the tasks that
read that column, and only for them. (An object or array where the column needs a scalar is
judged with the flat fields, in `mars.engine.decode`.)

A Struct field meets a value of the wrong kind with a msgspec validation error, which fails
the batch's one-call decode; the caller then decodes record by record and hands the records
that fail to `values_of_object`, a plain walk over the parsed JSON giving the same values.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

import msgspec

from mars.tasks.field_paths import FieldPath, Step, display_path, field_path

_MAX_ARRAY_FIELDS = 64  # beyond this index, an array is decoded whole instead


@dataclass(frozen=True, slots=True)
class BadValue:
    """A column's value in a record whose path runs through a value of the wrong kind."""

    reason: str


@dataclass(slots=True)
class _Node:
    path: FieldPath
    children: dict[Step, _Node] = field(default_factory=dict)
    columns: list[str] = field(default_factory=list)  # the columns ending here
    attr: str = ""  # its attribute in the parent's Struct, when the parent is one
    struct: Any = None  # its Struct type, when it is read as one

    def child(self, step: Step) -> _Node:
        node = self.children.get(step)
        if node is None:
            node = self.children[step] = _Node(path=(*self.path, step))
        return node

    @property
    def is_struct(self) -> bool:
        """Read as a Struct: an object whose keys, or an array whose first elements, are all
        that is read of it."""
        if not self.children or self.columns:
            return False
        if all(isinstance(step, str) for step in self.children):
            return True
        indexes = [step for step in self.children if isinstance(step, int)]
        return len(indexes) == len(self.children) and max(indexes) <= _MAX_ARRAY_FIELDS


class PathReader:
    """The record Struct for a set of columns, and their values from decoded records."""

    def __init__(self, columns: Sequence[str]) -> None:
        self.columns = tuple(columns)
        self._paths = {name: field_path(name) for name in self.columns}
        self._root = _Node(path=())
        for name, path in self._paths.items():
            node = self._root
            for step in path:
                node = node.child(step)
            node.columns.append(name)
        self.record_type = self._root.struct = self._struct_of(self._root, "MarsRecord")
        self._root_getters = [
            (node, attrgetter(node.attr)) for node in self._root.children.values()
        ]

    def _struct_of(self, node: _Node, name: str) -> Any:
        """An object's Struct (its keys renamed to attributes `f<i>`), or an array's (array-like:
        one attribute `i<n>` per position up to the last read; the positions not read are kept
        unparsed as `msgspec.Raw`, the elements after the last are skipped)."""
        if all(isinstance(step, str) for step in node.children):
            for i, child in enumerate(node.children.values()):
                child.attr = f"f{i}"
            attrs = [child.attr for child in node.children.values()]
            rename = {child.attr: str(step) for step, child in node.children.items()}
            array_like = False
        else:
            for step, child in node.children.items():
                child.attr = f"i{step}"
            attrs = [f"i{n}" for n in range(max(map(int, node.children)) + 1)]
            rename = {}
            array_like = True
        by_attr = {child.attr: child for child in node.children.values()}
        fields: list[tuple[str, Any, None]] = []
        for i, attr in enumerate(attrs):
            read = by_attr.get(attr)
            kind: Any = msgspec.Raw if read is None else Any
            if read is not None and read.is_struct:
                read.struct = self._struct_of(read, f"{name}_{i}")
                kind = read.struct | None
            fields.append((attr, kind, None))
        # No cycles: the GC need not track (and scan) every record.
        return msgspec.defstruct(name, fields, rename=rename, array_like=array_like, gc=False)

    def columns_of(self, records: Sequence[Any]) -> dict[str, list[Any]]:
        """Each column's values (in `records` order) from records of `record_type`."""
        out: dict[str, list[Any]] = {}
        for node, getter in self._root_getters:
            self._collect(node, list(map(getter, records)), out)
        return {name: out[name] for name in self.columns}

    def _collect(self, node: _Node, values: list[Any], out: dict[str, list[Any]]) -> None:
        for name in node.columns:
            out[name] = values
        for step, child in node.children.items():
            if node.struct is not None:  # below an Any node, a node is read as plain JSON
                if None in values:
                    attr = child.attr
                    below = [None if v is None else getattr(v, attr) for v in values]
                else:  # the usual case: one pass in C
                    below = list(map(attrgetter(child.attr), values))
            else:
                below = [_step(v, step, child.path) for v in values]
            self._collect(child, below, out)

    def values_of_object(self, record: dict[str, Any]) -> dict[str, Any]:
        """Each column's value in one record parsed as plain JSON (a dict)."""
        values: dict[str, Any] = {}
        for name, path in self._paths.items():
            value: Any = record
            for depth, step in enumerate(path):
                value = _step(value, step, path[: depth + 1])
            values[name] = value
        return values


def _step(value: Any, step: Step, path: FieldPath) -> Any:
    """The value at `path`, one step below `value` (the value at `path[:-1]`)."""
    if value is None or type(value) is BadValue:
        return value
    if isinstance(step, int):
        if type(value) is list:
            return value[step] if step < len(value) else None
        return BadValue(_wrong_kind(value, path, "an array"))
    if type(value) is dict:
        return value.get(step)
    return BadValue(_wrong_kind(value, path, "an object"))


def _wrong_kind(value: Any, path: FieldPath, needed: str) -> str:
    return (
        f"'{display_path(path[:-1])}' holds {_kind(value)} where {needed} is needed "
        f"(to read '{display_path(path)}')"
    )


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return f"a {type(value).__name__}"

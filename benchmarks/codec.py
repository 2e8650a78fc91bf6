"""Typed results to and from their JSON form (`benchmarks/results/*.json`), driven by the
dataclasses' type hints: no per-type code, so a result type is only its fields.

Decoding is lenient: a field missing from the JSON (a results file written before the field
existed, or a hand-made one in a test) takes its default; unknown keys are ignored; numbers
and strings are taken as they are.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from typing import Any, TypeVar

T = TypeVar("T")


def to_json(value: object) -> Any:
    """`value` as JSON-ready data: dataclasses as objects, tuples as lists."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_json(v) for v in value]
    return value


def from_json(kind: type[T], data: Any) -> T:
    """`data` (as `json.loads` gives it) as an instance of `kind`."""
    return typing.cast(T, _decode(kind, data))


def _decode(kind: Any, data: Any) -> Any:
    if kind is Any or kind is object:
        return data
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in (typing.Union, types.UnionType):
        if data is None and type(None) in args:
            return None
        (real,) = [a for a in args if a is not type(None)]
        return _decode(real, data)
    if origin is list:
        return [_decode(args[0], v) for v in data]
    if origin is tuple and args[-1] is Ellipsis:
        return tuple(_decode(args[0], v) for v in data)
    if origin is tuple:
        return tuple(_decode(arg, v) for arg, v in zip(args, data, strict=True))
    if origin is dict:
        return {k: _decode(args[1], v) for k, v in data.items()}
    if isinstance(kind, type) and dataclasses.is_dataclass(kind):
        hints = typing.get_type_hints(kind)
        present = {
            f.name: _decode(hints[f.name], data[f.name])
            for f in dataclasses.fields(kind)
            if f.init and f.name in data
        }
        return kind(**present)
    return data  # a number stays as JSON had it: 200 is written `200`, not `200.0`

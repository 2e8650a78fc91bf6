"""The data set: one batch's partial states of one bucket, as versioned msgpack.

Layout: `[VERSION, [aggregate wire names], [[window_start, [[key, [state, ...]], ...]], ...]]`
with windows ascending and groups ordered by their encoded key, so the same partials always
encode to the same bytes. Keys are msgpack arrays (tuples in memory); states use each
aggregate's `to_wire` form, one per aggregate in `spec.aggregates` order. The aggregate names
travel with the data, so a reducer can decode and merge without the spec and detects a data set
written for another version of the task. An int beyond 64 bits (a SUM that outgrew int64)
travels as a `mars.aggregates.msgpack_wire` extension value.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

from mars.aggregates import Aggregate, from_wire_name, msgpack_wire, wire_name
from mars.engine.errors import DataSetFormatError

VERSION = 1

GroupKey = tuple[Any, ...]
Groups = dict[GroupKey, list[Any]]
OpenWindows = dict[int, Groups]  # window start ms -> group key -> states

_decoder = msgpack_wire.decoder()
# The same layout decoded natively: keys as tuples, each window's groups as (key, wires)
# pairs, so a window becomes a dict without a Python step per group (the reducer's hot path).
_layout_decoder = msgpack_wire.decoder(
    tuple[int, list[str], list[tuple[int, list[tuple[tuple[Any, ...], list[Any]]]]]]
)


def encode_key(key: GroupKey) -> bytes:
    """The canonical bytes of a group key (bucket hashing and ordering)."""
    return msgpack_wire.encode(list(key))


@dataclass(frozen=True, slots=True, kw_only=True)
class DataSet:
    """Decoded partial states: window start -> group key -> one state per aggregate."""

    aggregates: tuple[Aggregate[Any], ...]
    windows: OpenWindows

    @property
    def aggregate_names(self) -> tuple[str, ...]:
        return tuple(wire_name(agg) for agg in self.aggregates)


def encode_dataset(
    aggregates: Sequence[Aggregate[Any]], windows: Mapping[int, Groups], *, canonical: bool = True
) -> bytes:
    """`canonical=False` leaves groups in dict order (same layout, not the same bytes for equal
    partials): a reducer's checkpoint, where encoding speed matters and nobody compares bytes."""
    if not canonical:
        return _encode_fast(aggregates, windows)
    body = []
    for start in sorted(windows):
        groups = sorted(
            ((encode_key(key), key, states) for key, states in windows[start].items()),
            key=lambda item: item[0],
        )
        body.append(
            [
                start,
                [
                    [list(key), [agg.to_wire(s) for agg, s in zip(aggregates, states, strict=True)]]
                    for _, key, states in groups
                ],
            ]
        )
    return msgpack_wire.encode([VERSION, [wire_name(agg) for agg in aggregates], body])


def _encode_fast(aggregates: Sequence[Aggregate[Any]], windows: Mapping[int, Groups]) -> bytes:
    names = [wire_name(agg) for agg in aggregates]
    if all(type(agg).to_wire is Aggregate.to_wire for agg in aggregates):  # identity wire forms
        body = [[start, list(groups.items())] for start, groups in windows.items()]
    else:
        body = [
            [
                start,
                [
                    [key, [agg.to_wire(s) for agg, s in zip(aggregates, states, strict=True)]]
                    for key, states in groups.items()
                ],
            ]
            for start, groups in windows.items()
        ]
    return msgpack_wire.encode([VERSION, names, body])


def decode_dataset(data: bytes) -> DataSet:
    try:
        version, names, body = _layout_decoder.decode(data)
    except (msgspec.DecodeError, TypeError, ValueError):
        return _decode_checked(data)  # not the layout: say what is wrong with it
    if version != VERSION:
        raise DataSetFormatError(f"unsupported data set version {version}")
    try:
        aggregates = tuple(from_wire_name(name) for name in names)
    except (TypeError, ValueError) as exc:
        raise DataSetFormatError(f"malformed data set: {exc}") from exc
    windows: OpenWindows = {}
    if all(type(agg).from_wire is Aggregate.from_wire for agg in aggregates):  # identity forms
        for start, groups in body:
            windows[start] = dict(groups)
            if any(len(wires) != len(aggregates) for wires in windows[start].values()):
                raise DataSetFormatError(f"malformed data set: a group without {len(names)} states")
    else:
        try:
            for start, groups in body:
                windows[start] = {
                    key: [agg.from_wire(w) for agg, w in zip(aggregates, wires, strict=True)]
                    for key, wires in groups
                }
        except (TypeError, ValueError) as exc:
            raise DataSetFormatError(f"malformed data set: {exc}") from exc
    return DataSet(aggregates=aggregates, windows=windows)


def _decode_checked(data: bytes) -> DataSet:
    """The general decode (any msgpack): clear errors for whatever is not a data set."""
    try:
        version, names, body = _decoder.decode(data)
    except (msgspec.DecodeError, TypeError, ValueError) as exc:
        raise DataSetFormatError(f"not an encoded data set: {exc}") from exc
    if version != VERSION:
        raise DataSetFormatError(f"unsupported data set version {version}")
    try:
        aggregates = tuple(from_wire_name(name) for name in names)
        windows: OpenWindows = {}
        for start, groups in body:
            windows[int(start)] = {
                tuple(key): [agg.from_wire(w) for agg, w in zip(aggregates, wires, strict=True)]
                for key, wires in groups
            }
    except (TypeError, ValueError) as exc:
        raise DataSetFormatError(f"malformed data set: {exc}") from exc
    return DataSet(aggregates=aggregates, windows=windows)


def merge_groups(
    aggregates: Sequence[Aggregate[Any]], into: Groups, other: Mapping[GroupKey, list[Any]]
) -> None:
    """Merge `other`'s groups into `into` (in place) with the aggregates' `merge`."""
    for key, states in other.items():
        current = into.get(key)
        if current is None:
            into[key] = list(states)
        else:
            into[key] = [
                agg.merge(a, b) for agg, a, b in zip(aggregates, current, states, strict=True)
            ]


def merge_into(open_windows: OpenWindows, dataset: DataSet) -> None:
    """Merge every window of `dataset` into `open_windows` (in place)."""
    for start, groups in dataset.windows.items():
        merge_groups(dataset.aggregates, open_windows.setdefault(start, {}), groups)

"""A batch's grouped partial states -> one encoded data set per bucket, without per-group objects.

The bytes are exactly those of `mars.engine.dataset.encode_dataset` over the same partials, and
the bucket of a group is exactly `bucket_of(key, n)` (crc32 of the key's msgpack bytes modulo
the count `n` of its window's epoch, mars.tasks.bucket_layout): only the way of getting there
is faster. Each group's entry `[key, [state, ...]]` is built from the grouped frame's columns,
crc32 runs over the encoded keys, and numpy splits the rows into (bucket, window) cells. An
entry's bytes are `0x92 + key + states`, so sorting the entries sorts the groups by encoded
key: msgpack values are prefix-free, two distinct keys differ before either ends. A cell's
sorted entries are joined as one raw msgpack array.

Two ways to the entries, the same bytes: with `mars_native` (native/src/group_entries.rs),
each key column and each aggregate's `wire_column` is written as one msgpack array from its
Arrow buffers (msgspec encodes a column of another kind, or wire forms that are not a column,
as one list), and Rust cuts the columns into entries, hashes the keys and sorts and joins the
cells; without it, msgspec encodes each group's key and states (C loops over `zip`) and Python
sorts each cell's list.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from itertools import repeat
from operator import itemgetter
from typing import Any, Protocol

import msgspec
import numpy as np
import numpy.typing as npt
import polars as pl

from mars.aggregates import Aggregate, msgpack_wire, wire_name
from mars.engine.dataset import VERSION
from mars.engine.native_json import series_column
from mars.native import mars_native
from mars.tasks.bucket_layout import BucketLayout

_encoder = msgspec.msgpack.Encoder()


def array_header(length: int) -> bytes:
    """The msgpack array header msgspec writes for `length` items (smallest form)."""
    if length < 16:
        return bytes((0x90 | length,))
    if length < 1 << 16:
        return b"\xdc" + length.to_bytes(2, "big")
    return b"\xdd" + length.to_bytes(4, "big")


def encode_bucketed_datasets(
    *,
    grouped: pl.DataFrame,
    window_column: str,
    key_columns: Sequence[str],
    aggregates: Sequence[Aggregate[Any]],
    state_prefixes: Sequence[str],
    layout: BucketLayout,
) -> dict[int, bytes]:
    """bucket -> encoded data set of the groups of `grouped` (one row per window and key).

    `grouped` holds `window_column`, the key columns and each aggregate's partial columns
    (named by its prefix, as `Aggregate.partial_exprs` made them).
    """
    height = grouped.height
    if height == 0:
        return {}
    prefixed = list(zip(aggregates, state_prefixes, strict=True))  # with their columns' prefix
    entries: _Entries = (
        _NativeEntries(grouped, key_columns, prefixed)
        if mars_native is not None
        else _PythonEntries(grouped, key_columns, prefixed)
    )
    windows = grouped.get_column(window_column)
    window_starts = windows.to_numpy()
    bucket = layout.bucket_numbers(entries.key_crc32(), window_starts)
    # A batch spans few windows: their hash `unique` and a binary search per row, not
    # `np.unique`'s sort of every row (a tenth of the time at 50,000 groups).
    starts = np.sort(windows.unique().to_numpy())
    window = np.searchsorted(starts, window_starts)
    # Cells ordered by (bucket, window start).
    cell = bucket * len(starts) + window
    names = [wire_name(agg) for agg in aggregates]
    bodies: dict[int, list[list[Any]]] = {}
    for code, groups in entries.cells(cell):
        start = int(starts[code % len(starts)])
        bodies.setdefault(code // len(starts), []).append([start, msgspec.Raw(groups)])
    return {
        bucket: _encoder.encode([VERSION, names, body]) for bucket, body in sorted(bodies.items())
    }


class _Entries(Protocol):
    """Each row's `[key, [state, ...]]`: the keys' crc32, and the entries joined by cell."""

    def key_crc32(self) -> npt.NDArray[np.int64]: ...

    def cells(self, cell: npt.NDArray[np.int64]) -> list[tuple[int, bytes]]:
        """(cell, msgpack array of its entries sorted by bytes) per distinct cell, ascending."""
        ...


class _NativeEntries:
    def __init__(
        self,
        grouped: pl.DataFrame,
        keys: Sequence[str],
        prefixed: list[tuple[Aggregate[Any], str]],
    ) -> None:
        key_arrays = [key_column_msgpack(grouped.get_column(name)) for name in keys]
        state_arrays = []
        for agg, prefix in prefixed:
            wires = agg.wire_column(grouped, prefix)
            array = None if wires is None else _native_array(wires)
            if array is None:  # (a sum may be an int beyond 64 bits)
                array = msgpack_wire.encode(agg.wires_from_frame(grouped, prefix))
            state_arrays.append(array)
        self._native = mars_native.GroupEntries(key_arrays, state_arrays, grouped.height)

    def key_crc32(self) -> npt.NDArray[np.int64]:
        return np.frombuffer(self._native.key_crc32(), dtype=np.uint32).astype(np.int64)

    def cells(self, cell: npt.NDArray[np.int64]) -> list[tuple[int, bytes]]:
        return self._native.cells(cell.tobytes())


class _PythonEntries:
    def __init__(
        self,
        grouped: pl.DataFrame,
        keys: Sequence[str],
        prefixed: list[tuple[Aggregate[Any], str]],
    ) -> None:
        height = grouped.height
        key_lists = [grouped.get_column(name).to_list() for name in keys]
        wires = [agg.wires_from_frame(grouped, prefix) for agg, prefix in prefixed]
        self._keys = list(map(_encoder.encode, _rows(key_lists, height)))
        # 0x92 (an array of two), then the key's bytes, then the states' (joined, not encoded
        # again: the key is encoded once).
        states = map(msgpack_wire.encode, _rows(wires, height))
        self._entries = list(map(b"".join, zip(repeat(b"\x92"), self._keys, states)))

    def key_crc32(self) -> npt.NDArray[np.int64]:
        keys = self._keys
        return np.fromiter(map(zlib.crc32, keys), dtype=np.int64, count=len(keys))

    def cells(self, cell: npt.NDArray[np.int64]) -> list[tuple[int, bytes]]:
        entries = self._entries
        order = np.argsort(cell, kind="stable")  # rows of one cell contiguous in `order`
        codes, firsts = np.unique(cell[order], return_index=True)
        ends = [*firsts[1:].tolist(), len(entries)]
        joined = []
        for code, first, end in zip(codes.tolist(), firsts.tolist(), ends, strict=True):
            rows = order[first:end].tolist()
            picked = [entries[rows[0]]] if len(rows) == 1 else list(itemgetter(*rows)(entries))
            picked.sort()
            joined.append((code, array_header(len(picked)) + b"".join(picked)))
        return joined


def key_column_msgpack(column: pl.Series) -> bytes:
    """The msgpack array of a key column's values, as a mapper writes a data set's keys: from
    its Arrow buffers where it is of a native kind, else by msgspec over its `to_list`."""
    array = _native_array(column)
    return msgpack_wire.encode(column.to_list()) if array is None else array


def _native_array(column: pl.Series) -> bytes | None:
    """The msgpack array msgspec writes for the column's values (`to_list`), written from its
    Arrow buffers with no Python object per value; None when it is not of a native kind
    (`series_column`)."""
    native = series_column(column)
    return None if native is None else mars_native.msgpack_array(len(column), native)


def _rows(columns: Sequence[Sequence[Any]], height: int) -> list[tuple[Any, ...]]:
    return list(zip(*columns, strict=True)) if columns else [()] * height

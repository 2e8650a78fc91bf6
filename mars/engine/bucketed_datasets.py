"""A batch's grouped partial states -> one encoded data set per bucket, without per-group objects.

The bytes are exactly those of `mars.engine.dataset.encode_dataset` over the same partials, and
the bucket of a group is exactly `bucket_of(key, n)` (crc32 of the key's msgpack bytes modulo
the count `n` of its window's epoch, mars.tasks.bucket_layout): only the way of getting there
is faster. Per group, msgspec encodes the key and the entry
`[key, [state, ...]]` straight from the grouped frame's columns (C loops over `zip`), crc32
runs over the encoded keys, and numpy splits the rows into (bucket, window) cells. An entry's
bytes are `0x92 + key + states`, so sorting the entries sorts the groups by encoded key:
msgpack values are prefix-free, two distinct keys differ before either ends. A cell's sorted
entries are joined as one raw msgpack array.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from itertools import repeat
from operator import itemgetter
from typing import Any

import msgspec
import numpy as np
import polars as pl

from mars.aggregates import Aggregate, wire_name
from mars.engine.dataset import VERSION
from mars.tasks.bucket_layout import BucketLayout

_encoder = msgspec.msgpack.Encoder()


def array_header(length: int) -> bytes:
    """The msgpack array header msgspec writes for `length` items (smallest form)."""
    if length < 16:
        return bytes((0x90 | length,))
    if length < 1 << 16:
        return b"\xdc" + length.to_bytes(2, "big")
    return b"\xdd" + length.to_bytes(4, "big")


def _rows(columns: Sequence[Sequence[Any]], height: int) -> list[tuple[Any, ...]]:
    return list(zip(*columns, strict=True)) if columns else [()] * height


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
    key_rows = _rows([grouped.get_column(name).to_list() for name in key_columns], height)
    wires = [
        agg.wires_from_frame(grouped, prefix)
        for agg, prefix in zip(aggregates, state_prefixes, strict=True)
    ]
    keys = list(map(_encoder.encode, key_rows))
    # Each group's `[key, [state, ...]]`: 0x92 (an array of two), then the key's bytes, then
    # the states' (joined, not encoded again: the key is encoded once).
    states = map(_encoder.encode, _rows(wires, height))
    entries = list(map(b"".join, zip(repeat(b"\x92"), keys, states)))
    window_starts = grouped.get_column(window_column).to_numpy()
    hashes = np.fromiter(map(zlib.crc32, keys), dtype=np.int64, count=height)
    bucket = layout.bucket_numbers(hashes, window_starts)
    starts, window = np.unique(window_starts, return_inverse=True)
    # Cells ordered by (bucket, window start); rows of one cell are contiguous in `order`.
    cell = bucket * len(starts) + window.reshape(-1)
    order = np.argsort(cell, kind="stable")
    cells, firsts = np.unique(cell[order], return_index=True)
    ends = [*firsts[1:].tolist(), height]
    names = [wire_name(agg) for agg in aggregates]
    bodies: dict[int, list[list[Any]]] = {}
    for code, first, end in zip(cells.tolist(), firsts.tolist(), ends, strict=True):
        rows = order[first:end].tolist()
        picked = [entries[rows[0]]] if len(rows) == 1 else list(itemgetter(*rows)(entries))
        picked.sort()
        groups = array_header(len(picked)) + b"".join(picked)
        start = int(starts[code % len(starts)])
        bodies.setdefault(code // len(starts), []).append([start, msgspec.Raw(groups)])
    return {
        bucket: _encoder.encode([VERSION, names, body]) for bucket, body in sorted(bodies.items())
    }

"""A batch's grouped partial states -> one encoded data set per bucket, without per-group objects.

The bytes are exactly those of `mars.engine.dataset.encode_dataset` over the same partials, and
the bucket of a group is exactly `bucket_of(key)` (crc32 of the key's msgpack bytes): only the
way of getting there is faster. Per group, msgspec encodes the key and the state list straight
from the grouped frame's columns (C loops over `zip`), crc32 runs over the encoded keys, and
Polars splits the rows into (bucket, window) cells. Within a cell each group's entry
`[key, [state, ...]]` is its bytes `0x92 + key + states`, and sorting the entry bytes sorts the
groups by encoded key: msgpack values are prefix-free, so two distinct keys differ before
either ends. The cell's group array is then joined as raw msgpack.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from operator import itemgetter
from typing import Any

import msgspec
import polars as pl

from mars.aggregates import Aggregate, wire_name
from mars.engine.dataset import VERSION

_PAIR = b"\x92"  # msgpack fixarray header of length 2: one group's [key, states]
_EMPTY_ARRAY = b"\x90"

_encoder = msgspec.msgpack.Encoder()


def array_header(length: int) -> bytes:
    """The msgpack array header msgspec writes for `length` items (smallest form)."""
    if length < 16:
        return bytes((0x90 | length,))
    if length < 1 << 16:
        return b"\xdc" + length.to_bytes(2, "big")
    return b"\xdd" + length.to_bytes(4, "big")


def encoded_rows(columns: Sequence[Sequence[Any]], height: int) -> list[bytes]:
    """The msgpack array of each row's values across `columns` (`height` rows)."""
    if not columns:
        return [_EMPTY_ARRAY] * height
    return list(map(_encoder.encode, zip(*columns, strict=True)))


def encode_bucketed_datasets(
    *,
    grouped: pl.DataFrame,
    window_column: str,
    key_columns: Sequence[str],
    aggregates: Sequence[Aggregate[Any]],
    state_prefixes: Sequence[str],
    buckets: int,
) -> dict[int, bytes]:
    """bucket -> encoded data set of the groups of `grouped` (one row per window and key).

    `grouped` holds `window_column`, the key columns and each aggregate's partial columns
    (named by its prefix, as `Aggregate.partial_exprs` made them).
    """
    height = grouped.height
    if height == 0:
        return {}
    keys = encoded_rows([grouped.get_column(name).to_list() for name in key_columns], height)
    wires = [
        agg.wires_from_frame(grouped, prefix)
        for agg, prefix in zip(aggregates, state_prefixes, strict=True)
    ]
    entries = list(map(bytes.__add__, keys, encoded_rows(wires, height)))
    crcs = pl.Series(list(map(zlib.crc32, keys)), dtype=pl.Int64)
    cells = (
        pl.DataFrame({"bucket": crcs % buckets, "window": grouped.get_column(window_column)})
        .with_row_index("row")
        .group_by("bucket", "window")
        .agg("row")
        .sort("bucket", "window")
    )
    names = [wire_name(agg) for agg in aggregates]
    bodies: dict[int, list[list[Any]]] = {}
    for bucket, start, rows in cells.iter_rows():
        picked = [entries[rows[0]]] if len(rows) == 1 else list(itemgetter(*rows)(entries))
        picked.sort()
        groups = array_header(len(picked)) + _PAIR + _PAIR.join(picked)
        bodies.setdefault(bucket, []).append([start, msgspec.Raw(groups)])
    return {
        bucket: _encoder.encode([VERSION, names, body]) for bucket, body in sorted(bodies.items())
    }

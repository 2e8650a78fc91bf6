"""Key groups of `WITH (watermark = 'key', key_groups = N)`: which of N clocks a group key uses.

The seed's memory trade-off (docs/semantics.md, "Key watermarks"): N clocks instead of one per
key, a group's clock being the largest time of any of its keys. The group of a key is a hash of
its canonical bytes (those `bucket_of` hashes), mixed so that it does not follow the bucket:
`((crc32(msgpack(key)) * 0x9E3779B1) mod 2**32) >> 8`, modulo N. The same in every process
(mapper, reducer, the differential oracle's own copy).

A reducer's clocks are by clock id (`clock_id`); its checkpoint keeps them as a pseudo window
at `KEY_CLOCKS_START` (`reducer.key_timers`), which pull queries read too.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import polars as pl

from mars.engine.dataset import GroupKey, encode_key

KEY_GROUP = "__kg"  # the group column that replaces the key columns in the mapper's clocks
_GOLDEN = 0x9E3779B1  # Fibonacci hashing: the high bits of the product mix every bit of crc32
KEY_CLOCKS_START = -(2**62)  # the key clocks' pseudo window, only ever in a checkpoint


def key_group(key: GroupKey, groups: int) -> int:
    """The clock group of `key`, in `[0, groups)`."""
    mixed = (zlib.crc32(encode_key(key)) * _GOLDEN) & 0xFFFFFFFF
    return (mixed >> 8) % groups


def clock_id(key: GroupKey, groups: int | None) -> GroupKey:
    """The id of the clock `key` uses: itself, or `(its key group,)` with `key_groups`."""
    return key if groups is None else (key_group(key, groups),)


def with_key_group(frame: pl.DataFrame, key_names: Sequence[str], groups: int) -> pl.DataFrame:
    """`frame` with `KEY_GROUP`, each row's group (hashed once per distinct key of the batch)."""
    names = list(key_names)
    if not names:
        return frame.with_columns(pl.lit(key_group((), groups), pl.Int64).alias(KEY_GROUP))
    distinct = frame.select(names).unique(maintain_order=True)
    ids = [key_group(row, groups) for row in distinct.iter_rows()]
    distinct = distinct.with_columns(pl.Series(KEY_GROUP, ids, dtype=pl.Int64))
    return frame.join(distinct, on=names, how="left", nulls_equal=True, maintain_order="left")

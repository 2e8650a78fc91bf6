"""Key clocks for `watermark = 'key'` (docs/semantics.md, "Key watermarks"): the pure core.

A key clock, per (partition, group key), is the largest event time of that key's records in
that partition that reached the aggregation (not bad, kept by WHERE). A record is judged
against its *effective clock*, `max(key clock before it, stream time before it - key_lag)`,
with the window kind's usual rule (`late_from <= clock`). Because a partition is read in order,
this is decided record by record, the same whatever the batches, mappers or crashes.

Bounded state: once `key clock <= stream time - key_lag`, the clock no longer changes any
decision (the second term wins, and the stream time only grows), so it is dropped; a key seen
again starts a new clock, which gives the same effective clock. `key_lag = 0` is exactly the
partition rule.

The clocks of one partition are a Polars frame (the key columns and `KEY_CLOCK`), stored as
Arrow IPC bytes beside the partition's applied offset, in the same atomic apply. With
`key_groups = N` a clock is per (partition, key group) instead (`mars.engine.key_groups`: the
frame holds the group column in place of the keys, at most N rows), the largest time of any key
of the group; everything else is the same.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence

import polars as pl

from mars.engine.key_groups import KEY_GROUP, with_key_group

KEY_CLOCK = "__kc"
_NO_KEY = "__nokey"  # the key column of a task without GROUP BY: one key


def encode_clocks(clocks: pl.DataFrame) -> bytes:
    buffer = io.BytesIO()
    clocks.write_ipc(buffer, compression="uncompressed")
    return buffer.getvalue()


def decode_clocks(data: bytes | None) -> pl.DataFrame | None:
    return None if not data else pl.read_ipc(io.BytesIO(data))


def _key_columns(key_names: Sequence[str]) -> list[str]:
    return list(key_names) or [_NO_KEY]


def _with_key(frame: pl.DataFrame, key_names: Sequence[str]) -> pl.DataFrame:
    return frame if key_names else frame.with_columns(pl.lit(0, pl.Int8).alias(_NO_KEY))


def _clocked_by(
    frame: pl.DataFrame, key_names: Sequence[str], groups: int | None
) -> tuple[pl.DataFrame, list[str]]:
    """`frame` with what its clocks are per (the keys, or their group), and those columns."""
    if groups is not None:
        return with_key_group(frame, key_names, groups), [KEY_GROUP]
    return _with_key(frame, key_names), _key_columns(key_names)


def _aligned(
    work: pl.DataFrame,
    clocks: Mapping[int, pl.DataFrame | None],
    keys: list[str],
    partition_column: str,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """`work` and the stored clocks of its partitions in one frame (with the partition column),
    their key columns of one type each (a key's type may differ between batches: an all-NULL
    column, ints then floats), one row per (partition, key)."""
    partitions = work.get_column(partition_column).unique().to_list()
    parts = [
        stored.with_columns(pl.lit(p, pl.Int64).alias(partition_column))
        for p in partitions
        if (stored := clocks.get(p)) is not None and stored.height
    ]
    schema = {name: work.schema[name] for name in keys}
    if not parts:
        empty = pl.DataFrame(schema={partition_column: pl.Int64, **schema, KEY_CLOCK: pl.Int64})
        return work, empty
    stored = pl.concat(parts, how="diagonal_relaxed")
    for name, dtype in schema.items():
        other = stored.schema[name]
        if other == dtype:
            continue
        if dtype == pl.Null:
            work = work.with_columns(pl.col(name).cast(other))
        elif other == pl.Null:
            stored = stored.with_columns(pl.col(name).cast(dtype))
        else:
            try:
                stored = stored.with_columns(pl.col(name).cast(dtype, strict=True))
            except pl.exceptions.PolarsError:
                work = work.with_columns(pl.col(name).cast(pl.String))
                stored = stored.with_columns(pl.col(name).cast(pl.String))
    group = [partition_column, *keys]
    stored = stored.group_by(group).agg(pl.col(KEY_CLOCK).cast(pl.Int64).max())
    return work, stored


def with_effective_clock(
    frame: pl.DataFrame,
    *,
    key_names: Sequence[str],
    partition_column: str,
    time_column: str,
    before_column: str,
    clocks: Mapping[int, pl.DataFrame | None],
    lag_ms: int,
    groups: int | None = None,
) -> pl.DataFrame:
    """`frame` (rows in partition order) with `before_column` (the partition's stream time
    before each row, when present) replaced by the row's effective clock (module docstring)."""
    if not frame.height:
        return frame
    work, keys = _clocked_by(frame, key_names, groups)
    group = [partition_column, *keys]
    running = pl.col(time_column).cum_max().shift(1).over(group)
    work, stored = _aligned(work, clocks, keys, partition_column)
    if stored.height:
        work = work.join(stored, on=group, how="left", nulls_equal=True, maintain_order="left")
        key_before = pl.max_horizontal(running, pl.col(KEY_CLOCK))
    else:
        key_before = running
    terms = [key_before]
    if before_column in frame.columns:
        terms.append(pl.col(before_column) - lag_ms)
    effective = work.select(pl.max_horizontal(terms).alias(before_column)).to_series()
    return frame.with_columns(effective)


def next_clocks(
    rows: pl.DataFrame,
    *,
    key_names: Sequence[str],
    partition_column: str,
    time_column: str,
    clocks: Mapping[int, pl.DataFrame | None],
    stream_times: Mapping[int, int],
    lag_ms: int,
    groups: int | None = None,
) -> dict[int, pl.DataFrame]:
    """The clocks after a batch whose aggregated rows (on time and late) are `rows`, for every
    partition of `clocks` or `rows`; clocks at or below `stream time - lag_ms` are dropped."""
    work, keys = _clocked_by(rows, key_names, groups)
    group = [partition_column, *keys]
    partitions = sorted(set(clocks) | set(work.get_column(partition_column).unique().to_list()))
    work, stored = _aligned(work, clocks, keys, partition_column)
    latest = work.group_by(group).agg(pl.col(time_column).max().alias(KEY_CLOCK))
    merged = (
        pl.concat([latest, stored.select(latest.columns)], how="vertical_relaxed")
        .group_by(group)
        .agg(pl.col(KEY_CLOCK).max())
    )
    out: dict[int, pl.DataFrame] = {}
    present = set(work.get_column(partition_column).unique().to_list())
    for partition in partitions:
        if partition in present:
            mine = merged.filter(pl.col(partition_column) == partition).drop(partition_column)
        else:  # no row of it in the batch: its clocks as they were
            kept = clocks.get(partition)
            mine = merged.drop(partition_column).clear() if kept is None else kept
        stream_time = stream_times.get(partition)
        if stream_time is not None:
            mine = mine.filter(pl.col(KEY_CLOCK) > stream_time - lag_ms)
        out[partition] = mine.sort(keys, nulls_last=True)
    return out

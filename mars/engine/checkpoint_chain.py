"""Incremental checkpoints: a delta holds only the groups a unit changed since the checkpoint
before it, so the checkpoint a committed progress names is a chain: one full checkpoint, then
deltas, oldest first (docs/reducer.md, "Incremental checkpoints").

A delta is `[DELTA_MAGIC, VERSION, inner]`, `inner` a checkpoint of its own (a data set, or a
columnar checkpoint) with the changed groups' whole current states, so a chain reads as "each
later part's groups replace the earlier parts' ones, window by window". The envelope makes a
reader that knows nothing of deltas fail on one instead of taking a delta's few groups for the
whole state. Open windows lose groups only by closing (a recovery drops the windows the
committed watermark closed) or by a rewind (whose checkpoint is always a full one), so a delta
never needs to delete a group.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
import polars as pl

from mars.aggregates import Aggregate, wire_name
from mars.engine.columnar_checkpoint import (
    ColumnarCheckpoint,
    checkpoint_dataset,
    decode_columnar,
    is_columnar,
)
from mars.engine.columnar_layout import key_columns, key_width
from mars.engine.dataset import DataSet, OpenWindows
from mars.engine.dataset_revisions import fitted
from mars.engine.errors import DataSetFormatError

DELTA_MAGIC = "mars-checkpoint-delta"
VERSION = 1

_encoder = msgspec.msgpack.Encoder()
_layout = msgspec.msgpack.Decoder(tuple[str, int, bytes])
_PREFIX = _encoder.encode([DELTA_MAGIC])[1:]  # the magic string's bytes after the array header


def encode_delta(inner: bytes) -> bytes:
    """A delta checkpoint around `inner`, the changed groups encoded as a full one would be."""
    return _encoder.encode([DELTA_MAGIC, VERSION, inner])


def is_delta(data: bytes) -> bool:
    return data[1 : 1 + len(_PREFIX)] == _PREFIX


def delta_inner(data: bytes) -> bytes:
    """The changed groups a delta carries, as a checkpoint of their own."""
    try:
        magic, version, inner = _layout.decode(data)
    except (msgspec.DecodeError, TypeError, ValueError) as exc:
        raise DataSetFormatError(f"not a delta checkpoint: {exc}") from exc
    if magic != DELTA_MAGIC or version != VERSION:
        raise DataSetFormatError(f"unsupported delta checkpoint {magic!r} version {version}")
    return inner


def _inners(parts: Sequence[bytes]) -> list[bytes]:
    """Each part's own checkpoint; the first must be a full one, the others deltas."""
    if not parts:
        raise DataSetFormatError("an empty checkpoint chain")
    if is_delta(parts[0]):
        raise DataSetFormatError("a checkpoint chain starts with a delta, not a full checkpoint")
    for part in parts[1:]:
        if not is_delta(part):
            raise DataSetFormatError("a full checkpoint after the first part of a chain")
    return [parts[0], *(delta_inner(part) for part in parts[1:])]


def chain_dataset(parts: Sequence[bytes], aggregates: Sequence[Aggregate[Any]] = ()) -> DataSet:
    """A chain (full checkpoint, then deltas) as one data set of Python groups. With
    `aggregates`, each part written before a task revision added some is fitted to them."""
    windows: OpenWindows = {}
    first: DataSet | None = None
    for inner in _inners(parts):
        dataset = fitted(checkpoint_dataset(inner), aggregates)
        if first is None:
            first = dataset
        elif dataset.aggregate_names != first.aggregate_names:
            raise DataSetFormatError(
                f"a checkpoint chain mixes aggregates {first.aggregate_names} and "
                f"{dataset.aggregate_names}"
            )
        for start, groups in dataset.windows.items():
            windows.setdefault(start, {}).update(groups)
    assert first is not None  # `_inners` refuses an empty chain
    return DataSet(aggregates=first.aggregates, windows=windows)


def chain_columnar(
    parts: Sequence[bytes], aggregates: Sequence[Aggregate[Any]]
) -> ColumnarCheckpoint | None:
    """A chain whose parts are all columnar checkpoints of exactly `aggregates` and hold no
    Python groups, as one columnar checkpoint (each window's rows concatenated, the last row of
    each group kept); None otherwise (read it with `chain_dataset`)."""
    names = tuple(wire_name(agg) for agg in aggregates)
    found = []
    for inner in _inners(parts):
        if not is_columnar(inner):
            return None
        part = decode_columnar(inner)
        if part.aggregate_names != names or part.python.windows:
            return None
        found.append(part)
    frames: dict[int, list[pl.DataFrame]] = {}
    for part in found:
        for start, frame in part.frames.items():
            frames.setdefault(start, []).append(frame)
    merged: dict[int, pl.DataFrame] = {}
    for start, pieces in frames.items():
        if len(pieces) == 1:
            merged[start] = pieces[0]
            continue
        try:
            stacked = pl.concat(pieces, how="vertical")
        except pl.exceptions.PolarsError:  # a column's type changed between parts
            return None
        keys = key_columns(key_width(aggregates, stacked))
        merged[start] = (
            stacked.unique(subset=keys, keep="last", maintain_order=True)
            if keys
            else stacked.tail(1)  # no GROUP BY: the window's one group
        )
    return ColumnarCheckpoint(
        aggregate_names=names, frames=merged, python=DataSet(aggregates=(), windows={})
    )

"""A data set's windows as the reducer's columnar frames, decoded natively
(`mars_native.decode_dataset_columns`, native/src/dataset_columns.rs).

The reducer's columnar state (reducer/columnar_groups.py) holds each window's groups as a
frame in `mars.engine.columnar_layout`'s layout; from Python groups it builds one with
`groups_frame`, the reference. Here the data set's bytes become those frames without a Python
object per group or value: the same frame, or None when the native decoder declines (anything
but the plain case, a column `groups_frame` would refuse among them; see there) and the
caller decodes the data set (`decode_dataset`), which also gives malformed bytes their error.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from mars.aggregates import Aggregate, Average, CountAll, CountNonNull, Max, Min, Sum, wire_name
from mars.engine.columnar_layout import key_columns, state_columns
from mars.engine.native_json import column_series
from mars.native import mars_native

# How each aggregate's wire state reads (`decode_dataset_columns`'s kinds).
_STATE, _ORDERED, _AVERAGE = range(3)


def dataset_frames(
    data: bytes, aggregates: Sequence[Aggregate[Any]]
) -> dict[int, pl.DataFrame] | None:
    """Window start -> its groups as a frame (no column for a window without groups), for a
    data set carrying exactly `aggregates`, all columnar; None: declined, or no extension."""
    kinds = _kinds(aggregates)
    if mars_native is None or kinds is None:
        return None
    names = [wire_name(agg) for agg in aggregates]
    windows = mars_native.decode_dataset_columns(data, names, kinds)
    if windows is None:
        return None
    states = state_columns(aggregates)
    frames: dict[int, pl.DataFrame] = {}
    for start, rows, columns in windows:
        if rows == 0:
            frames[start] = pl.DataFrame()
            continue
        labels = [*key_columns(len(columns) - len(states)), *states]
        frames[start] = pl.DataFrame(
            [column_series(label, rows, *c) for label, c in zip(labels, columns, strict=True)]
        )
    return frames


def _kinds(aggregates: Sequence[Aggregate[Any]]) -> list[int] | None:
    kinds: list[int] = []
    for agg in aggregates:
        if isinstance(agg, Average):
            kinds.append(_AVERAGE)
        elif isinstance(agg, Min | Max):
            kinds.append(_ORDERED)
        elif isinstance(agg, CountAll | CountNonNull | Sum):
            kinds.append(_STATE)
        else:
            return None  # no columnar merge: the Python state holds it
    return kinds

"""A data set's windows as the reducer's columnar frames, decoded natively
(`mars_native.decode_dataset_windows`, native/src/dataset_columns.rs).

The reducer's columnar state (reducer/columnar_groups.py) holds each window's groups as a
frame in `mars.engine.columnar_layout`'s layout; from Python groups it builds one with
`groups_frame`, the reference. Here the data set's bytes become those frames without a Python
object per group or value: the same frame, or None when the native decoder declines (anything
but the plain case, a column `groups_frame` would refuse among them; see there) and the
caller decodes the data set (`decode_dataset`), which also gives malformed bytes their error.
A window as decoded (`dataset_windows`) can also be merged as it is into a native group table
(`reducer.columnar_groups`), its frame made only if it has to be (`window_frame`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import polars as pl

from mars.aggregates import (
    Aggregate,
    Average,
    CountAll,
    CountNonNull,
    Max,
    Min,
    Sum,
    wire_name,
)
from mars.engine.bucketed_datasets import key_column_msgpack
from mars.engine.columnar_layout import key_columns, key_width, state_columns
from mars.engine.native_json import column_series, series_column
from mars.native import mars_native

if TYPE_CHECKING:
    from mars_native import DatasetWindow, NativeColumn

# How each aggregate's wire state reads (`decode_dataset_windows`' kinds).
_STATE, _ORDERED, _AVERAGE = range(3)


def dataset_windows(
    data: bytes, aggregates: Sequence[Aggregate[Any]]
) -> dict[int, DatasetWindow] | None:
    """Window start -> its groups as decoded, for a data set carrying exactly `aggregates`, all
    columnar; None: declined, or no extension."""
    kinds = _kinds(aggregates)
    if mars_native is None or kinds is None:
        return None
    names = [wire_name(agg) for agg in aggregates]
    windows = mars_native.decode_dataset_windows(data, names, kinds)
    return None if windows is None else dict(windows)


def window_frame(aggregates: Sequence[Aggregate[Any]], window: DatasetWindow) -> pl.DataFrame:
    """A decoded window's groups as a frame (no column when it has no group)."""
    return native_frame(aggregates, len(window), window.columns())


def frame_window(aggregates: Sequence[Aggregate[Any]], frame: pl.DataFrame) -> DatasetWindow | None:
    """A frame of this layout as a decoded window, its keys encoded as a mapper encodes them
    (`key_column_msgpack`, read back by `mars_native.DatasetWindow.of_columns` as a data
    set's keys are): for a group table to take a checkpoint's groups; None when a state
    column's type is not one of the native kinds, a key is one no data set holds (NaN, -0.0),
    or no extension."""
    if mars_native is None:
        return None
    width = key_width(aggregates, frame)
    keys = [key_column_msgpack(series) for series in frame.get_columns()[:width]]
    states: list[NativeColumn] = []
    for series in frame.get_columns()[width:]:
        column = series_column(series)
        if column is None:
            return None
        states.append(column)
    return mars_native.DatasetWindow.of_columns(frame.height, keys, states)


def native_frame(
    aggregates: Sequence[Aggregate[Any]], rows: int, columns: list[NativeColumn]
) -> pl.DataFrame:
    """A frame of this layout from native columns (keys, then states): a data set's window's,
    or a group table's (`mars_native.GroupTable.columns`)."""
    if not columns:  # a data set's window without groups
        return pl.DataFrame()
    states = state_columns(aggregates)
    labels = [*key_columns(len(columns) - len(states)), *states]
    return pl.DataFrame(
        [column_series(label, rows, *c) for label, c in zip(labels, columns, strict=True)]
    )


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

"""The result records of a window finalized in columns, their JSON built a column at a time.

`ResultRecords` used to turn each row into a dict and encode it with msgspec (`results.py`):
about 6 microseconds a row, a second of a reducer's CPU for a window of 150,000 groups. Here
the keys and values are the same bytes, built from the columns: each record follows a template
of literal text (the window's fields, the names, the punctuation) and column values, its fields
in the order the dict would have had (`first`, then the row's columns, then the revision; a
column of the same name as a field of `first` takes its place, as `{**first, **row}` does).

Two ways to the same bytes. With `mars_native`, Rust writes each value as msgspec does
(native/src/json_records.rs) from a range of rows' Arrow buffers. Without it (or for a UInt64
column, which may not fit its ints), Polars does: each field's JSON from Polars' encoder
(strings escaped, NaN and infinities as `null`, as msgspec does), with one difference mended
(Polars writes a float's exponent as `1e+20`, msgspec as `1e20`). At the close of experiment
16 the Polars way took about 0.18 CPU s of each reducer for 145,000 rows. Columns of other
types (dates, decimals, lists, Float32...) are left to the rows path (None): msgspec writes
those its own way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec
import polars as pl

from mars.engine.native_json import series_column
from mars.native import mars_native
from mars.tasks.spec import TaskSpec

# The records' JSON (`results.py` writes with it too): values JSON has no type for as their `str`.
json_bytes = msgspec.json.Encoder(enc_hook=str).encode

# The column types whose JSON is the same text from Polars as from msgspec (and Float64, mended).
_WRITTEN_AS_IS: tuple[type[pl.DataType], ...] = (
    *(pl.Int8, pl.Int16, pl.Int32, pl.Int64, pl.UInt8, pl.UInt16, pl.UInt32, pl.UInt64),
    *(pl.String, pl.Boolean, pl.Null),
)
# The int types the native way takes as Int64 (UInt64 may not fit: Polars writes it).
_WITHIN_INT64 = (pl.Int8, pl.Int16, pl.Int32, pl.UInt8, pl.UInt16, pl.UInt32)
_KEY, _VALUE = "\0key", "\0value"  # names no output column has

Piece = str | int  # a template's literal text, or the index of the column whose value goes there
Made = tuple[list[bytes], list[bytes]]  # keys and values, a record each


class FrameRecords:
    """The records `results.result_records` gives for the rows `{**first, **row}` (plus
    `"revision"` when not 0) of a frame, made a range of rows at a time (`rows`)."""

    def __init__(self, frame: pl.DataFrame, key: list[Piece], value: list[Piece]) -> None:
        self._frame = frame
        self._key = key
        self._value = value

    @classmethod
    def of(
        cls, spec: TaskSpec, first: Mapping[str, Any], frame: pl.DataFrame, revision: int
    ) -> FrameRecords | None:
        """None when a column's type is not written here (the rows path writes it)."""
        if frame.width == 0 or not all(_written(dtype) for dtype in frame.dtypes):
            return None
        fields: dict[str, Piece] = {
            name: json_bytes(value).decode() for name, value in first.items()
        }
        for index, name in enumerate(frame.columns):
            fields[name] = index
        if revision:
            fields["revision"] = str(revision)
        value: list[Piece] = []
        for i, (name, field) in enumerate(fields.items()):
            value += ["{" if i == 0 else ",", json_bytes(name).decode() + ":", field]
        value.append("}")
        key: list[Piece] = ["[" + json_bytes(spec.id).decode() + ",", fields["window_start"]]
        if spec.window.cumulate:  # cumulative windows share their start
            key += [",", fields["window_end"]]
        key.append(",[")
        for i, group_key in enumerate(spec.group_keys):
            key += ["," if i else "", fields.get(group_key.name, "null")]
        key.append("]]")
        return cls(frame, _joined_text(key), _joined_text(value))

    def rows(self, start: int, stop: int) -> Made:
        """The records of rows `start` to `stop` (excluded): their columns are copied for
        the native way, a range at a time, not the whole frame's (millions of rows)."""
        part = self._frame.slice(start, stop - start)
        made = _native_records(part, self._key, self._value)
        if made is not None:
            return made
        # (`with_columns`: a record of literals only still makes one per row)
        encoded = part.with_columns(
            _concatenated(part, self._key).alias(_KEY),
            _concatenated(part, self._value).alias(_VALUE),
        )
        return (
            encoded.get_column(_KEY).cast(pl.Binary).to_list(),
            encoded.get_column(_VALUE).cast(pl.Binary).to_list(),
        )


def _written(dtype: pl.DataType) -> bool:
    return dtype == pl.Float64 or isinstance(dtype, _WRITTEN_AS_IS)


def _native_records(frame: pl.DataFrame, key: list[Piece], value: list[Piece]) -> Made | None:
    """The frame's records made natively, or None without the extension or for a UInt64
    column."""
    if mars_native is None:
        return None
    columns = []
    for series in frame.get_columns():
        if isinstance(series.dtype, _WITHIN_INT64):
            series = series.cast(pl.Int64)
        column = series_column(series)
        if column is None:
            return None
        columns.append(column)
    return mars_native.json_records(frame.height, columns, key, value)


def _json(column: pl.Expr, dtype: pl.DataType) -> pl.Expr:
    """Each value's JSON text: Polars encodes it as the one field of a struct (`{"":...}`),
    whose wrapper is cut off."""
    text = pl.struct(column.alias("")).struct.json_encode().str.slice(4).str.head(-1)
    return text.str.replace("e+", "e", literal=True) if dtype == pl.Float64 else text


def _joined_text(pieces: Sequence[Piece]) -> list[Piece]:
    """The pieces with each run of literal text joined into one."""
    joined: list[Piece] = []
    for piece in pieces:
        if isinstance(piece, str) and joined and isinstance(joined[-1], str):
            joined[-1] += piece
        elif piece != "":
            joined.append(piece)
    return joined


def _concatenated(frame: pl.DataFrame, pieces: list[Piece]) -> pl.Expr:
    """Each row's pieces concatenated, a column's value as its JSON (`_json`)."""
    names, dtypes = frame.columns, frame.dtypes
    return pl.concat_str(
        [
            pl.lit(piece) if isinstance(piece, str) else _json(pl.col(names[piece]), dtypes[piece])
            for piece in pieces
        ]
    )

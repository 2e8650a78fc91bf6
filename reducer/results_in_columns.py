"""The result records of a window finalized in columns, their JSON built by Polars.

`ResultRecords` used to turn each row into a dict and encode it with msgspec (`results.py`):
about 6 microseconds a row, a second of a reducer's CPU for a window of 150,000 groups. Here
the keys and values are built a column at a time, as the same bytes: each field's JSON comes
from Polars' encoder (strings escaped, NaN and infinities as `null`, as msgspec does), with one
difference mended (Polars writes a float's exponent as `1e+20`, msgspec as `1e20`), and the
fields are joined in the order the dict would have had (`first`, then the row's columns, then
the revision; a column of the same name as a field of `first` takes its place, as `{**first,
**row}` does). Columns of other types (dates, decimals, lists, Float32...) are left to the
rows path (None): msgspec writes those its own way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec
import polars as pl

from mars.tasks.spec import TaskSpec

# The records' JSON (`results.py` writes with it too): values JSON has no type for as their `str`.
json_bytes = msgspec.json.Encoder(enc_hook=str).encode

# The column types whose JSON is the same text from Polars as from msgspec (and Float64, mended).
_WRITTEN_AS_IS: tuple[type[pl.DataType], ...] = (
    *(pl.Int8, pl.Int16, pl.Int32, pl.Int64, pl.UInt8, pl.UInt16, pl.UInt32, pl.UInt64),
    *(pl.String, pl.Boolean, pl.Null),
)
_KEY, _VALUE = "\0key", "\0value"  # names no output column has


def records_in_columns(
    spec: TaskSpec, first: Mapping[str, Any], part: pl.DataFrame, revision: int
) -> tuple[list[bytes], list[bytes]] | None:
    """The keys and values `results.result_records` gives for the rows `{**first, **row}`
    (plus `"revision"` when not 0) of `part`, in order; None when a column's type is not
    written here."""
    if part.width == 0 or not all(_written(dtype) for dtype in part.dtypes):
        return None
    fields: dict[str, str | pl.Expr] = {
        name: json_bytes(value).decode() for name, value in first.items()
    }
    for name, dtype in part.schema.items():
        fields[name] = _json(pl.col(name), dtype)
    if revision:
        fields["revision"] = str(revision)
    value: list[str | pl.Expr] = []
    for i, (name, field) in enumerate(fields.items()):
        value += ["{" if i == 0 else ",", json_bytes(name).decode() + ":", field]
    value.append("}")
    key: list[str | pl.Expr] = ["[" + json_bytes(spec.id).decode() + ",", fields["window_start"]]
    if spec.window.cumulate:  # cumulative windows share their start
        key += [",", fields["window_end"]]
    key.append(",[")
    for i, group_key in enumerate(spec.group_keys):
        key += ["," if i else "", fields.get(group_key.name, "null")]
    key.append("]]")
    # (`with_columns`: a record of literals only still makes one per row)
    encoded = part.with_columns(_joined(key).alias(_KEY), _joined(value).alias(_VALUE))
    return (
        encoded.get_column(_KEY).cast(pl.Binary).to_list(),
        encoded.get_column(_VALUE).cast(pl.Binary).to_list(),
    )


def _written(dtype: pl.DataType) -> bool:
    return dtype == pl.Float64 or isinstance(dtype, _WRITTEN_AS_IS)


def _json(column: pl.Expr, dtype: pl.DataType) -> pl.Expr:
    """Each value's JSON text: Polars encodes it as the one field of a struct (`{"":...}`),
    whose wrapper is cut off."""
    text = pl.struct(column.alias("")).struct.json_encode().str.slice(4).str.head(-1)
    return text.str.replace("e+", "e", literal=True) if dtype == pl.Float64 else text


def _joined(pieces: list[str | pl.Expr]) -> pl.Expr:
    """The pieces concatenated, runs of literal text joined first."""
    exprs: list[pl.Expr] = []
    text = ""
    for piece in pieces:
        if isinstance(piece, str):
            text += piece
            continue
        if text:
            exprs.append(pl.lit(text))
        exprs.append(piece)
        text = ""
    if text:
        exprs.append(pl.lit(text))
    return pl.concat_str(exprs)

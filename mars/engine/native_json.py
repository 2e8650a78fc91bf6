"""JSON batches read by the Rust extension straight into typed columns
(`mars_native.JsonColumnsDecoder`, native/src/json_columns.rs).

The native decoder reads the same fields and nested paths as the msgspec path
(`mars.engine.json_paths`), with no Python object per record or value: per column it hands
back Arrow buffers, which become Polars columns here. It takes only the plain case and
*declines* a batch (None) holding anything else (a malformed record, a value of the wrong
kind on a path, a nested value where a scalar is needed, a duplicate key on a read path,
integers beyond 64 bits, a column mixing strings or booleans with other kinds...): the
msgspec path, the reference, then decodes that batch and gives the bad records their reasons.
So a batch gives the same frame either way; tests/unit/engine/test_native_json.py checks it
on random records.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl
import pyarrow as pa

# Imported with the process: Polars imports it on the first Series it makes from Arrow
# (`column_series`), inside a mapper's first batch or a reducer's first close (0.02 s alone,
# about 0.1 s in each reducer at the close of experiment 16, its owners waiting on the import).
import pyarrow.compute

from mars.engine.joined_values import JoinedValues
from mars.native import mars_native
from mars.tasks.field_paths import field_path

# The column kinds of `JsonColumnsDecoder.decode`.
_NULL, _BOOL, _INT, _FLOAT, _STRING = range(5)
_ARROW_TYPES = {
    _BOOL: pa.bool_(),
    _INT: pa.int64(),
    _FLOAT: pa.float64(),
    _STRING: pa.large_string(),
}


# A column as the native decoders hand it over: (kind, validity bitmap or None, values, string
# offsets or None), native/src/typed_columns.rs.
NativeColumn = tuple[int, bytes | None, bytes, bytes | None]


@dataclass(frozen=True, slots=True, kw_only=True)
class NativeColumns:
    """A batch whose every record decoded natively: one typed Polars column per field."""

    rows: int
    series: dict[str, pl.Series]

    @classmethod
    def of(
        cls, fields: Sequence[str], rows: int, decoded: list[NativeColumn] | None
    ) -> NativeColumns | None:
        """A native decoder's answer (one column per field, or None: declined) as series."""
        if decoded is None:
            return None
        series = {
            name: column_series(name, rows, *column)
            for name, column in zip(fields, decoded, strict=True)
        }
        return cls(rows=rows, series=series)


class NativeJsonReader:
    """The native decoder of a set of columns (`mars.tasks.field_paths` names); `columns` is
    None for every batch when the extension is not built."""

    def __init__(self, fields: Sequence[str]) -> None:
        self.fields = tuple(fields)
        self._decoder = None
        if mars_native is not None and self.fields:
            paths = [list(field_path(name)) for name in self.fields]
            try:
                self._decoder = mars_native.JsonColumnsDecoder(paths)
            except ValueError:  # more keys read of one object than it takes
                self._decoder = None

    def columns(self, values: Sequence[bytes]) -> NativeColumns | None:
        """The batch's columns, or None: declined (the msgspec path decodes it)."""
        if self._decoder is None or not values:
            return None
        joined = JoinedValues.of(values)
        decoded = self._decoder.decode(joined.data, joined.ends.tobytes())
        return NativeColumns.of(self.fields, len(joined), decoded)


def column_series(
    name: str, rows: int, kind: int, validity: bytes | None, values: bytes, offsets: bytes | None
) -> pl.Series:
    """A column of a native decoder (native/src/typed_columns.rs) as a Polars series."""
    if kind == _NULL:
        return pl.Series(name, [None] * rows)  # as the msgspec path types a NULL-only column
    mask = None if validity is None else pa.py_buffer(validity)
    buffers = [mask, pa.py_buffer(values)]
    if kind == _STRING:
        assert offsets is not None
        buffers = [mask, pa.py_buffer(offsets), pa.py_buffer(values)]
    array = pa.Array.from_buffers(_ARROW_TYPES[kind], rows, buffers)
    return pl.Series(name, array)


def series_column(series: pl.Series) -> NativeColumn | None:
    """A Polars series as a native column (`column_series`' inverse), or None when its type
    is not one of the kinds. A slice of a longer series has its own values copied."""
    kind = _KINDS.get(series.dtype)
    if kind is None:
        return None
    if kind == _NULL:
        return (_NULL, None, b"", None)
    array = series.to_arrow()
    if array.offset:  # its buffers hold the values before it: a copy of its own, from 0
        array = pa.concat_arrays([array])
    if kind == _STRING and array.type != pa.large_string():
        array = array.cast(pa.large_string())
    validity, *buffers = array.buffers()
    bits = None if validity is None or array.null_count == 0 else validity.to_pybytes()
    if kind == _STRING:
        offsets, data = buffers
        return (kind, bits, b"" if data is None else data.to_pybytes(), offsets.to_pybytes())
    return (kind, bits, buffers[0].to_pybytes(), None)


_KINDS: dict[pl.DataType, int] = {
    pl.Null(): _NULL,
    pl.Boolean(): _BOOL,
    pl.Int64(): _INT,
    pl.Float64(): _FLOAT,
    pl.String(): _STRING,
}

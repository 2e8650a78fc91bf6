"""Record bytes -> a Polars DataFrame holding only the fields a task reads.

JSON records are decoded natively when the Rust extension takes the batch
(`mars.engine.native_json`: typed columns straight from the bytes; it declines any batch that
is not plain), else by msgspec into a Struct generated for the task's fields (nested
Structs for paths into nested fields, `mars.engine.json_paths`), so unknown fields are skipped
in C and a whole batch is decoded in one call; only when that fails is the batch decoded record
by record to find the bad ones. CSV records are split by the task's header spec. A record is
*bad* (dead-letter, with a reason) when it is not decodable, when a field it needs holds a
nested value, when a path it needs runs through a value of the wrong kind, or when a field used
directly as a SUM/AVG argument is not a number; bad records are dropped from the frame and
never affect the others.

Column typing: a field's values must be scalars. Numbers stay numbers (ints become floats when
mixed with floats); if one batch holds both strings and numbers in a non-numeric field, the
numbers become their string form for that batch, so give each field one type per topic.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from operator import methodcaller
from typing import Any, Protocol

import msgspec
import numpy as np
import polars as pl

from mars.engine.errors import EngineError
from mars.engine.joined_values import join_values
from mars.engine.json_paths import BadValue, PathReader
from mars.engine.native_json import NativeColumns, NativeJsonReader
from mars.native import mars_native
from mars.tasks.field_paths import display_path, field_path
from mars.tasks.spec import CsvFormat, InputFormat

ROW = "__row"  # index of the record in the batch, kept through every step

_NUMERIC_KINDS = frozenset({int, float, type(None)})
_SCALAR_KINDS = frozenset({int, float, str, bool, type(None)})
_INT64_RANGE = range(-(2**63), 2**63)


@dataclass(frozen=True, slots=True, kw_only=True)
class DecodedBatch:
    """The decodable records of a batch: `frame` has `ROW` plus one column per field."""

    frame: pl.DataFrame
    bad: dict[int, str]  # row -> reason


class RecordDecoder(Protocol):
    def decode(self, values: Sequence[bytes]) -> DecodedBatch: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class FieldPlan:
    """Which input fields a task reads (column names: a top-level field's own name, or a
    nested path's `mars.tasks.field_paths.path_name`), and which must hold numbers."""

    fields: tuple[str, ...]
    numeric_fields: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True, kw_only=True)
class JsonColumns:
    """A JSON batch decoded to Python values: `rows` are the decodable records, `columns` their
    fields' values (one list per field, in `rows` order), `bad` the undecodable ones."""

    rows: Sequence[int]
    columns: dict[str, list[Any]]
    bad: dict[int, str]


class JsonRecordDecoder:
    """Decodes JSON objects, reading only `plan.fields` (missing fields are NULL); a field may
    be a path into nested objects and arrays (`mars.engine.json_paths`)."""

    def __init__(self, plan: FieldPlan, *, native: bool = True) -> None:
        """`native=False`: msgspec only (the reference the native decoder is tested against)."""
        self.plan = plan
        self._reader = PathReader(plan.fields)
        record_type = self._reader.record_type
        self._one = msgspec.json.Decoder(record_type)
        self._many = msgspec.json.Decoder(list[record_type])  # type: ignore[valid-type]
        self._native = NativeJsonReader(plan.fields if native else ())

    def decode(self, values: Sequence[bytes]) -> DecodedBatch:
        native = self.native_columns(values)
        frame = None if native is None else self.from_native(native)
        if frame is not None:
            return DecodedBatch(frame=frame, bad={})
        return self.from_columns(self.columns(values))

    def native_columns(self, values: Sequence[bytes]) -> NativeColumns | None:
        """Every field of the plan as a typed column, decoded natively; None when declined."""
        return self._native.columns(values)

    def from_native(self, decoded: NativeColumns) -> pl.DataFrame | None:
        """This plan's frame from the native columns of a plan holding at least its fields, or
        None (`frame_from_native`)."""
        return frame_from_native(decoded, self.plan)

    def columns(self, values: Sequence[bytes]) -> JsonColumns:
        """Every field of the plan, as Python values. A record that decodes with more fields
        read decodes with fewer (unread fields are only skipped; a path through a value of the
        wrong kind is a `BadValue` in its own column only), so when none is bad a decoder of
        more fields can serve this one's `from_columns`."""
        try:
            decoded = self._many.decode(b"[" + join_values(values, b",") + b"]")
            if len(decoded) != len(values):
                raise ValueError("record boundaries do not match")
        except (msgspec.DecodeError, ValueError):  # (UnicodeDecodeError is a ValueError)
            return self._columns_one_by_one(values)
        return JsonColumns(
            rows=range(len(values)), columns=self._reader.columns_of(decoded), bad={}
        )

    def _columns_one_by_one(self, values: Sequence[bytes]) -> JsonColumns:
        bad: dict[int, str] = {}
        typed: list[Any] = []  # records of the plan's Struct
        typed_at: list[int] = []  # their positions among the good rows
        walked: list[dict[str, Any]] = []  # column values of the records walked as plain JSON
        walked_at: list[int] = []
        good: list[int] = []
        for row, value in enumerate(values):
            try:
                typed.append(self._one.decode(value))
                typed_at.append(len(good))
            except (msgspec.DecodeError, UnicodeDecodeError) as exc:
                # (msgspec raises UnicodeDecodeError for invalid UTF-8 in a string it reads.)
                plain = _plain_object(value)
                if plain is None:
                    bad[row] = f"not a decodable JSON object: {exc}"
                    continue
                # A nested value of the wrong kind on some path: found by walking.
                walked.append(self._reader.values_of_object(plain))
                walked_at.append(len(good))
            good.append(row)
        columns = self._reader.columns_of(typed)
        if walked:
            for name, typed_values in columns.items():
                merged: list[Any] = [None] * len(good)
                for position, value in zip(typed_at, typed_values, strict=True):
                    merged[position] = value
                for position, record in zip(walked_at, walked, strict=True):
                    merged[position] = record[name]
                columns[name] = merged
        return JsonColumns(rows=good, columns=columns, bad=bad)

    def from_columns(self, decoded: JsonColumns) -> DecodedBatch:
        """This plan's frame from `columns` of a plan holding at least its fields."""
        columns = {name: decoded.columns[name] for name in self.plan.fields}
        return _frame_from_columns(decoded.rows, columns, self.plan, dict(decoded.bad))


@dataclass(frozen=True, slots=True)
class LineShape:
    """Text cut at newlines: how many lines, their shortest and longest (bytes), and their
    fewest and most fields (a line's delimiters + 1)."""

    lines: int
    shortest: int
    longest: int
    fewest_fields: int
    most_fields: int


def line_shape(data: bytes, delimiter: int) -> LineShape:
    """The `LineShape` of `data`: one pass in Rust (native/src/line_shape.rs), or NumPy's when
    `mars_native` is not built."""
    if mars_native is not None:
        return LineShape(*mars_native.line_shape(data, delimiter))
    array = np.frombuffer(data, dtype=np.uint8)
    line_ends = np.append(np.flatnonzero(array == ord("\n")), len(data))
    line_starts = np.append(0, line_ends[:-1] + 1)
    lengths = line_ends - line_starts
    delimiters = np.flatnonzero(array == delimiter)  # each line's: those in [start, end)
    fields = np.searchsorted(delimiters, line_ends) - np.searchsorted(delimiters, line_starts) + 1
    return LineShape(
        lines=len(line_ends),
        shortest=int(lengths.min()),
        longest=int(lengths.max()),
        fewest_fields=int(fields.min()),
        most_fields=int(fields.max()),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class PlainLines:
    """A batch's records joined by newlines, none needing the csv module's rules
    (`CsvRecordDecoder.plain_lines`), and their shape."""

    data: bytes
    shape: LineShape


@dataclass(frozen=True, slots=True, kw_only=True)
class CsvStrings:
    """A batch of plain CSV lines (`CsvRecordDecoder.strings`), each read column as text."""

    lines: int
    by_index: dict[int, pl.Series]


class CsvRecordDecoder:
    """Decodes one CSV line per record by the task's header spec; empty fields are NULL."""

    def __init__(self, plan: FieldPlan, csv_format: CsvFormat) -> None:
        names = [field_path(name) for name in plan.fields]
        missing = [
            name
            for name, path in zip(plan.fields, names, strict=True)
            if len(path) > 1 or path[0] not in csv_format.columns
        ]
        if missing:
            raise EngineError(
                f"fields {missing} are not in the CSV header {csv_format.columns} "
                "(nested fields need JSON input)"
            )
        self.plan = plan
        self.csv_format = csv_format
        self._delimiter = csv_format.delimiter
        self._delimiter_byte = csv_format.delimiter.encode()[0]  # what `line_shape` counts
        self._width = len(csv_format.columns)
        self._indexes = [csv_format.columns.index(str(path[0])) for path in names]

    def decode(self, values: Sequence[bytes]) -> DecodedBatch:
        bad: dict[int, str] = {}
        plain = self.plain_lines(values)
        if plain is None:
            return self._frame(self._read_one_by_one(values, bad), bad)
        strings = self.strings(plain)
        frame = None if strings is None else self.from_strings(strings)
        if frame is not None:
            return DecodedBatch(frame=frame, bad=bad)  # the usual case
        split = map(methodcaller("split", self._delimiter), plain.data.decode().split("\n"))
        return self._frame(enumerate(split), bad)

    def _read_one_by_one(
        self, values: Sequence[bytes], bad: dict[int, str]
    ) -> Iterator[tuple[int, list[str]]]:
        """(row, fields) of each record the csv module can read; the others go to `bad`."""
        for row, value in enumerate(values):
            try:
                text = value.decode("utf-8").rstrip("\r\n")
                yield row, next(csv.reader([text], delimiter=self._delimiter, strict=True))
            except (UnicodeDecodeError, csv.Error, StopIteration) as exc:
                bad[row] = f"not a decodable CSV line: {exc or 'empty record'}"

    def plain_lines(self, values: Sequence[bytes]) -> PlainLines | None:
        """The records joined by newlines, or None when one might need the csv module's rules.

        Plain means: valid UTF-8, no quote character, no NUL, no CR or LF inside a line, no
        empty record, no field over the csv module's size limit. Such a line is exactly its
        text split at the delimiter, which is what `csv.reader` returns for it. The checks
        run over the joined bytes (one scan, `line_shape`), not record by record.
        """
        joined = join_values(values, b"\n")
        shape = line_shape(joined, self._delimiter_byte)
        if b"\r" in joined or shape.lines != len(values):
            # Some record carries its own line break: strip the trailing ones and look again.
            joined = b"\n".join(map(methodcaller("rstrip", b"\r\n"), values))
            shape = line_shape(joined, self._delimiter_byte)
        if (
            not values
            or b'"' in joined
            or b"\r" in joined
            or b"\x00" in joined
            or shape.lines != len(values)
            or shape.shortest == 0
            or shape.longest > csv.field_size_limit()
        ):
            return None
        if not joined.isascii():
            try:
                joined.decode("utf-8")
            except UnicodeDecodeError:
                return None
        return PlainLines(data=joined, shape=shape)

    def strings(self, plain: PlainLines) -> CsvStrings | None:
        """Plain lines parsed by Polars's CSV reader (Rust, the whole batch in one call), the
        plan's columns as text; None when a line has the wrong width (Polars would pad short
        lines and cut long ones without a word): the split path then gives the reasons. It
        depends on the header, not on the plan's types, so a decoder of the same header and
        more fields can serve this one's `from_strings`."""
        if len(self._delimiter.encode()) != 1:
            return None  # Polars takes a one-byte separator (and the shape counted its first)
        shape = plain.shape
        if shape.fewest_fields != self._width or shape.most_fields != self._width:
            return None
        wanted = sorted(set(self._indexes))
        try:
            read = pl.read_csv(
                plain.data,
                has_header=False,
                separator=self._delimiter,
                quote_char=None,
                infer_schema=False,  # every column a string, as csv.reader gives them
                columns=wanted,
            )
        except pl.exceptions.PolarsError:
            return None
        return CsvStrings(
            lines=shape.lines, by_index=dict(zip(wanted, read.get_columns(), strict=True))
        )

    def from_strings(self, strings: CsvStrings) -> pl.DataFrame | None:
        """This plan's typed frame, or None when a SUM/AVG field is not all 64-bit integers
        (the split path then gives those records their exact reasons and types)."""
        series = [pl.Series(ROW, range(strings.lines), dtype=pl.Int64)]
        for name, index in zip(self.plan.fields, self._indexes, strict=True):
            column = strings.by_index[index].rename(name)
            if name in self.plan.numeric_fields:
                numbers = column.cast(pl.Int64, strict=False)
                if numbers.null_count() != column.null_count():
                    return None
                column = numbers
            elif column.null_count() == len(column):
                column = pl.Series(name, [None] * len(column))  # typed as the split path types it
            series.append(column)
        return pl.DataFrame(series)

    def _frame(self, lines: Iterable[tuple[int, list[str]]], bad: dict[int, str]) -> DecodedBatch:
        """The frame of the `(row, fields)` lines of the header's width; the others are bad."""
        rows: list[int] = []
        parsed: list[list[str]] = []
        for row, fields in lines:
            if len(fields) != self._width:
                bad[row] = f"expected {self._width} CSV columns, got {len(fields)}"
                continue
            rows.append(row)
            parsed.append(fields)
        columns: dict[str, list[Any]] = {
            name: [fields[index] or None for fields in parsed]
            for name, index in zip(self.plan.fields, self._indexes, strict=True)
        }
        for name in self.plan.numeric_fields:
            columns[name] = [_parse_number(text) for text in columns[name]]
        return _frame_from_columns(rows, columns, self.plan, bad)


def _parse_number(text: str | None) -> int | float | str | None:
    """CSV text -> int or float; unparsable text stays a string (reported as not numeric)."""
    if text is None:
        return None
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def _frame_from_columns(
    rows: Sequence[int], columns: dict[str, list[Any]], plan: FieldPlan, bad: dict[int, str]
) -> DecodedBatch:
    """Check each field's values, drop the rows with bad ones, build typed Polars columns."""
    bad_positions: dict[int, str] = {}
    for name, values in columns.items():
        numeric = name in plan.numeric_fields
        allowed = _NUMERIC_KINDS if numeric else _SCALAR_KINDS
        if not set(map(type, values)) <= allowed or any(
            type(v) is int and v not in _INT64_RANGE for v in values if numeric
        ):
            for position, value in enumerate(values):
                reason = _value_problem(name, value, numeric=numeric)
                if reason is not None:
                    bad_positions.setdefault(position, reason)
    if bad_positions:
        keep = [p for p in range(len(rows)) if p not in bad_positions]
        for position, reason in bad_positions.items():
            bad[rows[position]] = reason
        rows = [rows[p] for p in keep]
        columns = {name: [values[p] for p in keep] for name, values in columns.items()}
    series = [pl.Series(ROW, rows, dtype=pl.Int64)]
    for name, values in columns.items():
        series.append(_series(name, values, numeric=name in plan.numeric_fields))
    return DecodedBatch(frame=pl.DataFrame(series), bad=bad)


def frame_from_native(decoded: NativeColumns, plan: FieldPlan) -> pl.DataFrame | None:
    """`plan`'s frame from a native decoder's columns (of at least its fields), or None when a
    SUM/AVG field holds strings or booleans (the Python path gives those records their
    reasons)."""
    series = [pl.Series(ROW, range(decoded.rows), dtype=pl.Int64)]
    for name in plan.fields:
        column = decoded.series[name]
        if name in plan.numeric_fields:
            if column.dtype == pl.Null:
                column = column.cast(pl.Int64)  # as `_series` types it
            elif column.dtype not in (pl.Int64, pl.Float64):
                return None
        series.append(column)
    return pl.DataFrame(series)


def _plain_object(value: bytes) -> dict[str, Any] | None:
    """`value` parsed as plain JSON if it is an object, else None."""
    try:
        parsed = msgspec.json.decode(value)
    except (msgspec.DecodeError, UnicodeDecodeError):
        return None
    return parsed if type(parsed) is dict else None


def _value_problem(name: str, value: Any, *, numeric: bool) -> str | None:
    kind = type(value)
    if kind is BadValue:
        return str(value.reason)
    name = display_path(field_path(name))
    if kind in (dict, list):
        return f"field '{name}' holds a nested value, a scalar is needed"
    if numeric and kind not in _NUMERIC_KINDS:
        return (
            f"field '{name}' must be a number for SUM/AVG/VAR/STDDEV/APPROX_PERCENTILE, "
            f"got {value!r:.60}"
        )
    if numeric and kind is int and value not in _INT64_RANGE:
        return f"field '{name}' is outside the 64-bit integer range"
    if kind not in _SCALAR_KINDS:
        return f"field '{name}' holds an unsupported value {value!r:.60}"
    return None


def _series(name: str, values: list[Any], *, numeric: bool) -> pl.Series:
    try:
        series = pl.Series(name, values, strict=False)
    except (OverflowError, pl.exceptions.PolarsError):
        # Integers beyond 64 bits in a non-numeric field: keep them as text.
        series = pl.Series(name, [None if v is None else str(v) for v in values])
    if numeric and not series.dtype.is_numeric():
        series = series.cast(pl.Int64)  # all NULL
    return series


def decoder_for(
    *, plan: FieldPlan, input_format: InputFormat, csv_format: CsvFormat | None
) -> RecordDecoder:
    """The decoder of a task's input format; an unknown format is an `EngineError` (never
    silently JSON)."""
    if input_format is InputFormat.JSON:
        return JsonRecordDecoder(plan)
    if input_format is InputFormat.CSV:
        if csv_format is None:
            raise EngineError("CSV input needs a header spec (columns and delimiter)")
        return CsvRecordDecoder(plan, csv_format)
    known = ", ".join(f"InputFormat.{member.name}" for member in InputFormat)
    raise EngineError(
        f"unknown input format {input_format!r} (a {type(input_format).__name__}): "
        f"expected one of {known}"
    )

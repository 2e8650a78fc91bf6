"""Event-time parsing: a column of raw field values -> Int64 epoch milliseconds (null = bad).

- `epoch_ms`: integers (floats are floored; numeric strings are accepted).
- `epoch_s`: integers or floats; fractions are kept to the millisecond (floored after rounding
  away float noise, so 1.001 s is 1001 ms and not 1000).
- `iso8601`: strings like `2024-05-01T12:00:00Z`, `...+02:00`, with optional fractions;
  a string without an offset is read as UTC.
- `processing`: the caller's `now_ms` for every record (no field is read).
"""

from __future__ import annotations

from datetime import UTC, datetime

import polars as pl

from mars.tasks.spec import TimeFormat

_MS = pl.Int64


def event_time_ms(values: pl.Series, *, time_format: TimeFormat, now_ms: int) -> pl.Series:
    """Epoch milliseconds per value; null where the value is missing or unparsable."""
    if time_format is TimeFormat.PROCESSING:
        return pl.Series(values.name, [now_ms] * values.len(), dtype=_MS)
    if time_format is TimeFormat.ISO8601:
        return _iso8601_ms(values)
    numbers = _as_numbers(values)
    if time_format is TimeFormat.EPOCH_S:
        if numbers.dtype.is_integer():
            return (numbers.cast(_MS) * 1000).alias(values.name)
        return _floor_ms(numbers * 1000.0).alias(values.name)
    if numbers.dtype.is_integer():
        return numbers.cast(_MS).alias(values.name)
    return _floor_ms(numbers).alias(values.name)


def _as_numbers(values: pl.Series) -> pl.Series:
    if values.dtype.is_numeric():
        return values
    if values.dtype == pl.String:
        as_int = values.cast(_MS, strict=False)
        if as_int.null_count() == values.null_count():
            return as_int
        return values.cast(pl.Float64, strict=False)
    # Booleans, nested values, all-null columns: nothing parsable.
    return pl.Series(values.name, [None] * values.len(), dtype=_MS)


def _floor_ms(ms: pl.Series) -> pl.Series:
    finite = ms.cast(pl.Float64)
    finite = finite.set(finite.is_nan() | finite.is_infinite() | (finite.abs() > 9.2e18), None)
    return finite.round(3).floor().cast(_MS, strict=False)


def _parse_iso(text: str) -> int | None:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    delta = moment - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000


def _iso8601_ms(values: pl.Series) -> pl.Series:
    if values.dtype != pl.String:
        return pl.Series(values.name, [None] * values.len(), dtype=_MS)
    # Timestamps repeat a lot within a batch: parse each distinct string once.
    distinct = values.drop_nulls().unique().to_list()
    parsed = {text: _parse_iso(text) for text in distinct}
    return values.replace_strict(parsed, default=None, return_dtype=_MS)

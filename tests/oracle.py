"""An independent oracle: a task's expected window results, recomputed with DuckDB.

This is the truth the integration tests compare Mars's output to, so it shares no code with
`mars.engine`, `mars.windows` or `mars.aggregates`: records are decoded here with the standard
library, and filtering, window assignment and aggregation are plain DuckDB SQL.

    expected = expected_results(values, group_by=["sip", "type"], window_ms=60_000,
                                aggregates={"cnt": "count(*)", "total": "sum(bytes)"})
    expected[(window_start_ms, "10.0.0.1", "dns")] == {"cnt": 3, "total": 1234}
    expected.skipped  # records rejected as malformed

A record is skipped (malformed) when it is not a JSON object (or, for CSV, not UTF-8 text with
the declared number of columns), or its time field is missing or not a number (epoch units) /
not an ISO-8601 date (`time_unit="iso"`). Lateness is not modelled: compare against runs
whose grace covers the input's disorder.
"""

from __future__ import annotations

import json
import math
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import duckdb

TimeUnit = Literal["s", "ms", "iso"]
ResultKey = tuple[Any, ...]  # (window_start_ms, *group values in group_by order)

_TS_COLUMN = "__oracle_ts_ms"

# `expected_results` arguments of the tests' usual task: count and sum(bytes) per (sip, type)
# over 60 s tumbling windows.
SIP_TYPE_COUNT_SUM: dict[str, Any] = {
    "group_by": ["sip", "type"],
    "window_ms": 60_000,
    "aggregates": {"cnt": "count(*)", "total": "sum(bytes)"},
}


@dataclass(frozen=True, eq=False)  # eq=False keeps Mapping's dict-like equality
class ExpectedResults(Mapping[ResultKey, dict[str, Any]]):
    """Results keyed by `(window_start_ms, *group values)`, plus the input accounting.

    A read-only mapping, so it compares equal to a plain dict with the same items.
    """

    results: dict[ResultKey, dict[str, Any]]
    valid: int  # records that decoded with a usable event time
    skipped: int  # malformed records
    matched: int = 0  # valid records that passed WHERE
    skipped_indices: frozenset[int] = field(default_factory=frozenset)

    def __getitem__(self, key: ResultKey) -> dict[str, Any]:
        return self.results[key]

    def __iter__(self) -> Iterator[ResultKey]:
        return iter(self.results)

    def __len__(self) -> int:
        return len(self.results)


def event_time_ms(value: Any, unit: TimeUnit) -> int | None:
    """The record's event time in epoch ms, or None when it is unusable."""
    if unit == "iso":
        if not isinstance(value, str):
            return None
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            return None
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=UTC)
        # Integer arithmetic: float timestamps would round some milliseconds.
        delta = parsed - datetime(1970, 1, 1, tzinfo=UTC)
        return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    scaled = value * 1000 if unit == "s" else value
    return scaled if isinstance(scaled, int) else math.floor(scaled)


def _csv_value(text: str) -> Any:
    """CSV cells become int, float or str, whichever parses first."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _decode(value: bytes, csv_columns: Sequence[str] | None, delimiter: str) -> Any:
    if csv_columns is None:
        try:
            return json.loads(value)
        except ValueError:  # JSONDecodeError and UnicodeDecodeError
            return None
    try:
        cells = value.decode("utf-8").split(delimiter)
    except UnicodeDecodeError:
        return None
    if len(cells) != len(csv_columns):
        return None
    return {name: _csv_value(cell) for name, cell in zip(csv_columns, cells, strict=True)}


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def expected_results(
    records: Iterable[bytes],
    *,
    group_by: Sequence[str],
    window_ms: int,
    aggregates: Mapping[str, str],
    where: str | None = None,
    time_field: str = "timestamp",
    time_unit: TimeUnit = "s",
    slide_ms: int | None = None,
    csv_columns: Sequence[str] | None = None,
    csv_delimiter: str = ",",
) -> ExpectedResults:
    """Recompute a task's results over `records` (raw Kafka values, in any order).

    `aggregates` maps an output alias to a DuckDB aggregate over the input columns, e.g.
    `{"cnt": "count(*)", "total": "sum(bytes)", "users": "count(DISTINCT uid)"}`; `where` is
    a DuckDB predicate. Windows are `[start, start + window_ms)` on epoch ms, every `slide_ms`
    (default: tumbling). Groups are column names. With `csv_columns`, records are CSV lines
    with those columns (cells typed int, float or str) instead of JSON objects.
    """
    if window_ms <= 0 or (slide_ms is not None and slide_ms <= 0):
        raise ValueError("window_ms and slide_ms must be > 0")
    if not aggregates:
        raise ValueError("at least one aggregate is needed")
    slide = slide_ms or window_ms
    skipped: set[int] = set()
    valid = 0
    with tempfile.TemporaryDirectory(prefix="mars-oracle-") as tmp:
        path = Path(tmp) / "records.ndjson"
        with path.open("w", encoding="utf-8") as out:
            for index, value in enumerate(records):
                record = _decode(value, csv_columns, csv_delimiter)
                ts_ms = (
                    event_time_ms(record.get(time_field), time_unit)
                    if isinstance(record, dict)
                    else None
                )
                if not isinstance(record, dict) or ts_ms is None:
                    skipped.add(index)
                    continue
                record[_TS_COLUMN] = ts_ms
                out.write(json.dumps(record))
                out.write("\n")
                valid += 1
        if valid == 0:
            return ExpectedResults(
                results={}, valid=0, skipped=len(skipped), skipped_indices=frozenset(skipped)
            )
        results, matched = _aggregate(
            path,
            group_by=group_by,
            aggregates=aggregates,
            where=where,
            size=window_ms,
            slide=slide,
        )
    return ExpectedResults(
        results=results,
        valid=valid,
        skipped=len(skipped),
        matched=matched,
        skipped_indices=frozenset(skipped),
    )


def _aggregate(
    path: Path,
    *,
    group_by: Sequence[str],
    aggregates: Mapping[str, str],
    where: str | None,
    size: int,
    slide: int,
) -> tuple[dict[ResultKey, dict[str, Any]], int]:
    ts = f"CAST({_quote(_TS_COLUMN)} AS BIGINT)"
    windows_per_record = -(-size // slide)
    groups = [_quote(name) for name in group_by]
    aggregate_sql = [f"{sql} AS {_quote(alias)}" for alias, sql in aggregates.items()]
    # Exact integer floor: DuckDB's % truncates toward zero, so fold negatives back up.
    last_start = f"CAST({ts} - ((({ts} % {slide}) + {slide}) % {slide}) AS BIGINT)"
    query = f"""
        WITH matched AS (
            SELECT * FROM input WHERE {where or "TRUE"}
        ),
        assigned AS (
            SELECT *, unnest(generate_series(
                {last_start} - {(windows_per_record - 1) * slide},
                {last_start},
                CAST({slide} AS BIGINT)
            )) AS __window_start
            FROM matched
        )
        SELECT __window_start, {", ".join([*groups, *aggregate_sql])}
        FROM assigned
        WHERE __window_start + {size} > {ts}
        GROUP BY {", ".join(["__window_start", *groups])}
    """
    connection = duckdb.connect()
    try:
        connection.execute(
            "CREATE TABLE input AS SELECT * FROM read_json(?, format='newline_delimited', "
            "sample_size=-1)",
            [str(path)],
        )
        rows = connection.execute(query).fetchall()
        matched_row = connection.execute(
            f"SELECT count(*) FROM input WHERE {where or 'TRUE'}"
        ).fetchone()
    finally:
        connection.close()
    width = len(group_by)
    aliases = list(aggregates)
    results = {
        tuple(row[: 1 + width]): dict(zip(aliases, row[1 + width :], strict=True)) for row in rows
    }
    return results, int(matched_row[0]) if matched_row else 0

"""Python rows into a DuckDB table in one statement, for the tests' oracles.

DuckDB's `executemany` runs one INSERT per row, about a millisecond each: 45 of the 54 seconds
of a 40,000-record session test went there. `insert_rows` hands the rows over as one Arrow
table typed like the DuckDB table's columns, so a value of the wrong type fails loudly here
rather than being cast.
"""

from __future__ import annotations

from collections.abc import Sequence

import duckdb
import pyarrow as pa

_ARROW_TYPES = {
    "INTEGER": pa.int32(),
    "BIGINT": pa.int64(),
    "DOUBLE": pa.float64(),
    "VARCHAR": pa.string(),
    "BOOLEAN": pa.bool_(),
    "JSON": pa.string(),  # the JSON text
}


def insert_rows(
    con: duckdb.DuckDBPyConnection, table: str, rows: Sequence[Sequence[object]]
) -> None:
    """Append `rows` (each a value per column, in the table's column order) to `table`."""
    if not rows:
        return
    described = con.execute(f"DESCRIBE {table}").fetchall()
    columns = list(zip(*rows, strict=True))
    if len(columns) != len(described):
        raise ValueError(f"{table} has {len(described)} columns, the rows {len(columns)}")
    arrow = pa.table(
        {
            name: pa.array(values, type=_ARROW_TYPES[kind])
            for (name, kind, *_), values in zip(described, columns, strict=True)
        }
    )
    con.register("_insert_rows", arrow)
    try:
        con.execute(f"INSERT INTO {table} SELECT * FROM _insert_rows")
    finally:
        con.unregister("_insert_rows")

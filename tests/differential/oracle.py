"""The differential test's oracle: a `Case`'s expected results and counters, in DuckDB SQL.

It implements docs/semantics.md independently of Mars (no import from `mars`): records are
decoded with the standard library, event times parsed by `tests.oracle.event_time_ms`, and
everything else is one DuckDB query per case:

- bad: not a JSON object, a path the task reads (`m.u.id`, `m.tags[0]`, `m.w`) runs through a
  value of the wrong kind or ends at an object or array (judged with DuckDB's json functions,
  which read the paths' values too), or WHERE keeps it and it has no valid event time;
- filtered: WHERE is false or NULL;
- stream time before a record: the max event time of the earlier records of its partition,
  bad ones left out (filtered and late ones count);
- late: tumbling/hopping `last_start + size + grace <= before`, session `ts + grace < before`,
  cumulate `max_start + size + grace <= before` (its max window closed);
- `watermark = 'key'`: `before` is the effective clock instead, `max(key clock before,
  stream time before - key_lag)`, the key clock being the max event time of the earlier
  records of its partition and group key that WHERE kept (not bad); with `key_groups = N`,
  of its partition and key group (`tests.differential.cases.key_group` of the key's values);
- hopping: a record counts in its windows with `start + size + grace > before`;
- cumulate: each accepted record joined to the windows `[max_start, max_start + n * step)`
  ending after it, kept where `end + grace > before`;
- sessions: per group, the accepted records in time order, cut where the next is more than the
  gap later; `window_start` / `window_end` = first / last time;
- HAVING on the aggregated rows, then top-k (`Expected.top_k`, checked by the comparison).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import duckdb

from tests.differential.cases import Case, _path_value, key_group
from tests.duckdb_rows import insert_rows
from tests.oracle import event_time_ms

ResultKey = tuple[Any, ...]  # (window_start, [window_end if cumulate,] *group key values)


@dataclass(frozen=True, slots=True)
class Expected:
    rows: dict[ResultKey, dict[str, Any]]  # aliases (and `window_end` for sessions)
    records: int
    bad: int
    late: int
    filtered: int


def expected_of(case: Case) -> Expected:
    shape = case.shape
    decoded: list[tuple[Any, ...]] = []  # p, pos, ts, k1, k2, v, f, s, m (JSON text), kg
    not_objects = 0
    for p, values in enumerate(case.partitions):
        for pos, value in enumerate(values):
            try:
                record = json.loads(value)
            except ValueError:
                record = None
            if not isinstance(record, dict):
                not_objects += 1
                continue
            ts = event_time_ms(record.get("ts"), shape.unit)
            fields = [record.get(name) for name in ("k1", "k2", "v", "f", "s")]
            nested = json.dumps(record["m"]) if "m" in record else None
            group = None
            if shape.key_groups is not None:
                key = [_path_value(record, name) for name in shape.keys]
                group = key_group(key, shape.key_groups)
            decoded.append((p, pos, ts, *fields, nested, group))
    con = duckdb.connect()
    try:
        con.execute(
            "CREATE TABLE raw (p INT, pos INT, ts BIGINT, k1 VARCHAR, k2 BIGINT, v BIGINT, "
            "f DOUBLE, s VARCHAR, m JSON, kg BIGINT)"
        )
        insert_rows(con, "raw", decoded)
        con.execute(_nested_sql(case))
        (path_bad,) = con.execute("SELECT count(*) FROM raw WHERE path_bad").fetchone() or (0,)
        con.execute(_judge_sql(case))
        bad, late, filtered = con.execute(
            "SELECT count(*) FILTER (WHERE bad), count(*) FILTER (WHERE late), "
            "count(*) FILTER (WHERE NOT keep) FROM judged"
        ).fetchone() or (0, 0, 0)
        rows = con.execute(_aggregate_sql(case)).fetchall()
        names = [d[0] for d in con.description or []]
    finally:
        con.close()
    width = len(shape.window_of((0, 0))) + len(shape.keys)
    results = {
        tuple(row[:width]): dict(zip(names[width:], row[width:], strict=True)) for row in rows
    }
    return Expected(
        rows=results,
        records=case.records,
        bad=not_objects + int(path_bad) + int(bad),
        late=int(late),
        filtered=int(filtered),
    )


# Each path: its column in the oracle's table, its value, and when it makes a record bad.
_OBJECT_OR_NULL = "IN ('OBJECT', 'NULL')"
_PATHS = {
    "m.u.id": (
        "m_uid",
        "TRY_CAST(json_extract(m, '$.u.id') AS BIGINT)",
        f"json_type(m) NOT {_OBJECT_OR_NULL} OR json_type(m, '$.u') NOT {_OBJECT_OR_NULL} "
        "OR json_type(m, '$.u.id') IN ('OBJECT', 'ARRAY')",
    ),
    "m.tags[0]": (
        "m_tag0",
        "json_extract_string(m, '$.tags[0]')",
        f"json_type(m) NOT {_OBJECT_OR_NULL} OR json_type(m, '$.tags') NOT IN ('ARRAY', 'NULL') "
        "OR json_type(m, '$.tags[0]') IN ('OBJECT', 'ARRAY')",
    ),
    "m.w": (
        "m_w",
        "TRY_CAST(json_extract(m, '$.w') AS BIGINT)",
        f"json_type(m) NOT {_OBJECT_OR_NULL} OR json_type(m, '$.w') IN ('OBJECT', 'ARRAY')",
    ),
}


def _duck(sql: str) -> str:
    """Mars's SQL text with each path as the oracle's column of its value."""
    for path, (column, _, _) in _PATHS.items():
        sql = sql.replace(path, column)
    return sql


def _nested_sql(case: Case) -> str:
    """`raw` with each path's value and `path_bad`; `r`: the records that are not bad."""
    paths = case.shape.paths
    bad = [f"coalesce({rule}, false)" for path, (_, _, rule) in _PATHS.items() if path in paths]
    values = ", ".join(f"{value} AS {column}" for column, value, _ in _PATHS.values())
    return f"""
        CREATE OR REPLACE TABLE raw AS
        SELECT *, {values}, {" OR ".join(bad) or "false"} AS path_bad FROM raw;
        CREATE TABLE r AS SELECT * EXCLUDE (path_bad) FROM raw WHERE NOT path_bad;
    """


def _judge_sql(case: Case) -> str:
    shape = case.shape
    if shape.window == "session":
        late = f"ts + {shape.grace_ms} < before"
    elif shape.window == "cumulate":
        late = f"{_last_start(shape.size_ms)} + {shape.size_ms + shape.grace_ms} <= before"
    else:
        late = f"{_last_start(shape.slide_ms)} + {shape.size_ms + shape.grace_ms} <= before"
    return f"""
        CREATE TABLE judged AS
        WITH kept AS (
            SELECT *, coalesce(({_duck(shape.where or "TRUE")}), false) AS keep FROM r
        ),
        timed AS (
            SELECT *, max(ts) OVER (
                PARTITION BY p ORDER BY pos ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING
            ) AS before
            FROM kept
        ){_key_clock_sql(case)}
        SELECT *, keep AND ts IS NULL AS bad,
               keep AND ts IS NOT NULL AND coalesce({late}, false) AS late,
               keep AND ts IS NOT NULL AND NOT coalesce({late}, false) AS accepted
        FROM {"keyed" if case.shape.key_lag_ms is not None else "timed"}
    """


def _key_clock_sql(case: Case) -> str:
    """`watermark = 'key'`: the CTE `keyed`, `timed` with `before` the effective clock."""
    shape = case.shape
    if shape.key_lag_ms is None:
        return ""
    by = ", ".join(["p", *(_duck(key) for key in shape.keys)])
    if shape.key_groups is not None:
        by = "p, kg"
    return f""",
        clocked AS (
            SELECT *, max(CASE WHEN keep AND ts IS NOT NULL THEN ts END) OVER (
                PARTITION BY {by} ORDER BY pos ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING
            ) AS key_before
            FROM timed
        ),
        keyed AS (
            SELECT * EXCLUDE (key_before) REPLACE (
                CASE WHEN key_before IS NULL THEN before - {shape.key_lag_ms}
                     ELSE greatest(key_before, before - {shape.key_lag_ms}) END AS before
            )
            FROM clocked
        )"""


def _last_start(slide: int) -> str:
    # An exact floor: DuckDB's % truncates toward zero.
    return f"(ts - (((ts % {slide}) + {slide}) % {slide}))"


def _aggregate_sql(case: Case) -> str:
    shape = case.shape
    keys = [_duck(key) for key in shape.keys]
    aggregates = ", ".join(_duck(a.oracle_sql()) for a in shape.aggregates)
    if shape.window == "session":
        by_key = f"PARTITION BY {', '.join(keys)}" if keys else ""
        grouped = f"""
            WITH accepted AS (SELECT * FROM judged WHERE accepted),
            marked AS (
                SELECT *, CASE WHEN ts - lag(ts) OVER ({by_key} ORDER BY ts) <= {shape.size_ms}
                               THEN 0 ELSE 1 END AS starts
                FROM accepted
            ),
            numbered AS (
                SELECT *, sum(starts) OVER ({by_key} ORDER BY ts, starts DESC
                                            ROWS UNBOUNDED PRECEDING) AS session
                FROM marked
            )
            SELECT min(ts) AS window_start, {", ".join([*keys, ""])}
                   {aggregates}, max(ts) AS window_end
            FROM numbered GROUP BY {", ".join([*keys, "session"])}
        """
    elif shape.window == "cumulate":
        size, step = shape.size_ms, shape.slide_ms
        grouped = f"""
            WITH windows AS (
                SELECT *, {_last_start(size)} AS window_start FROM judged WHERE accepted
            ),
            assigned AS (
                SELECT *, unnest(generate_series(
                    window_start + {step}, window_start + {size}, CAST({step} AS BIGINT)
                )) AS window_end
                FROM windows
            )
            SELECT window_start, window_end, {", ".join([*keys, ""])} {aggregates}
            FROM assigned
            WHERE window_end > ts AND (before IS NULL OR window_end + {shape.grace_ms} > before)
            GROUP BY {", ".join(["window_start", "window_end", *keys])}
        """
    else:
        size, slide = shape.size_ms, shape.slide_ms
        per_record = -(-size // slide)
        last = _last_start(slide)
        grouped = f"""
            WITH assigned AS (
                SELECT *, unnest(generate_series(
                    {last} - {(per_record - 1) * slide}, {last}, CAST({slide} AS BIGINT)
                )) AS window_start
                FROM judged WHERE accepted
            )
            SELECT window_start, {", ".join([*keys, ""])} {aggregates}
            FROM assigned
            WHERE window_start + {size} > ts
              AND (before IS NULL OR window_start + {size + shape.grace_ms} > before)
            GROUP BY {", ".join(["window_start", *keys])}
        """
    having = f"WHERE {shape.having}" if shape.having else ""
    return f"SELECT * FROM ({grouped}) {having}"

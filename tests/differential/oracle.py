"""The differential test's oracle: a `Case`'s expected results and counters, in DuckDB SQL.

It implements docs/semantics.md independently of Mars (no import from `mars`): records are
decoded with the standard library, event times parsed by `tests.oracle.event_time_ms`, and
everything else is one DuckDB query per case:

- bad: not a JSON object, or WHERE keeps it and it has no valid event time;
- filtered: WHERE is false or NULL;
- stream time before a record: the max event time of the earlier records of its partition,
  bad ones left out (filtered and late ones count);
- late: tumbling/hopping `last_start + size + grace <= before`, session `ts + grace < before`,
  cumulate `max_start + size + grace <= before` (its max window closed);
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

from tests.differential.cases import Case
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
    decoded: list[tuple[int, int, int | None, Any, Any, Any, Any, Any]] = []
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
            decoded.append((p, pos, ts, *fields))
    con = duckdb.connect()
    try:
        con.execute(
            "CREATE TABLE r (p INT, pos INT, ts BIGINT, k1 VARCHAR, k2 BIGINT, v BIGINT, "
            "f DOUBLE, s VARCHAR)"
        )
        if decoded:
            con.executemany("INSERT INTO r VALUES (?, ?, ?, ?, ?, ?, ?, ?)", decoded)
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
        bad=not_objects + int(bad),
        late=int(late),
        filtered=int(filtered),
    )


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
            SELECT *, coalesce(({shape.where or "TRUE"}), false) AS keep FROM r
        ),
        timed AS (
            SELECT *, max(ts) OVER (
                PARTITION BY p ORDER BY pos ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING
            ) AS before
            FROM kept
        )
        SELECT *, keep AND ts IS NULL AS bad,
               keep AND ts IS NOT NULL AND coalesce({late}, false) AS late,
               keep AND ts IS NOT NULL AND NOT coalesce({late}, false) AS accepted
        FROM timed
    """


def _last_start(slide: int) -> str:
    # An exact floor: DuckDB's % truncates toward zero.
    return f"(ts - (((ts % {slide}) + {slide}) % {slide}))"


def _aggregate_sql(case: Case) -> str:
    shape = case.shape
    keys = list(shape.keys)
    aggregates = ", ".join(a.oracle_sql() for a in shape.aggregates)
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

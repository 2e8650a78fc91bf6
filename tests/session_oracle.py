"""An independent oracle for session windows, in DuckDB SQL (shares no code with Mars).

    expected = expected_sessions(records, gap_ms=10_000, grace_ms=5_000)
    expected.sessions[("10.0.0.1", first_ms)] == Session(last_ms=..., count=..., total=...)

`records` are `(partition, key, ts_ms, value)` in the order each partition holds them. A record
is late when `ts + grace <` the largest time before it in its partition (Mars's rule for
session windows); the accepted records of each key form sessions wherever consecutive times are
more than `gap_ms` apart. Each session gives its last time, its count and the sum of values.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import duckdb

from tests.duckdb_rows import insert_rows


@dataclass(frozen=True, slots=True)
class Session:
    last_ms: int
    count: int
    total: int


@dataclass(frozen=True, slots=True)
class ExpectedSessions:
    sessions: dict[tuple[str, int], Session]  # (key, first_ms) -> session
    late: int


def expected_sessions(
    records: Sequence[tuple[int, str, int, int]], *, gap_ms: int, grace_ms: int
) -> ExpectedSessions:
    con = duckdb.connect()
    con.execute("CREATE TABLE r (p INTEGER, pos INTEGER, k VARCHAR, ts BIGINT, v BIGINT)")
    insert_rows(con, "r", [(p, i, k, ts, v) for i, (p, k, ts, v) in enumerate(records)])
    con.execute(
        """
        CREATE TABLE judged AS
        SELECT *, coalesce(ts + ? < max(ts) OVER (
            PARTITION BY p ORDER BY pos ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING
        ), false) AS late
        FROM r
        """,
        [grace_ms],
    )
    rows = con.execute(
        """
        WITH accepted AS (SELECT k, ts, v FROM judged WHERE NOT late),
        marked AS (
            SELECT *, CASE WHEN ts - lag(ts) OVER (PARTITION BY k ORDER BY ts) <= ?
                           THEN 0 ELSE 1 END AS starts
            FROM accepted
        ),
        numbered AS (
            SELECT *, sum(starts) OVER (PARTITION BY k ORDER BY ts, starts DESC
                                        ROWS UNBOUNDED PRECEDING) AS session
            FROM marked
        )
        SELECT k, min(ts), max(ts), count(*), sum(v) FROM numbered GROUP BY k, session
        """,
        [gap_ms],
    ).fetchall()
    (late,) = con.execute("SELECT count(*) FROM judged WHERE late").fetchone() or (0,)
    return ExpectedSessions(
        sessions={
            (k, int(first)): Session(last_ms=int(last), count=int(count), total=int(total))
            for k, first, last, count, total in rows
        },
        late=int(late),
    )

"""The expected results of the Nexmark queries, by DuckDB over the bids produced.

Independent of Mars's engine: plain SQL over the generated columns, with Mars's documented
rules written out. Windows are half-open `[start, end)` on epoch ms: a 10 s window sliding by
2 s holds a bid at `t` when `start <= t < start + 10 s`, `start` a multiple of 2 s. A session
holds the bids of one bidder at most the gap apart; its row carries the times of its first and
last bid (both included). With partitions in time order and grace 0 no bid is late, so each
query is a plain GROUP BY per window.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import pyarrow as pa

from devtools.gen.nexmark import Bids

HOP_SIZE_MS, HOP_SLIDE_MS = 10_000, 2_000  # q5
TUMBLE_MS = 10_000  # q7
GAP_MS = 10_000  # q11


@dataclass(frozen=True, slots=True, kw_only=True)
class Expected:
    """Per query, what a correct run writes (the sentinels' windows left out).

    - `q5`: window start -> (the largest bid count, every auction with that count);
    - `q7`: window start -> the highest price;
    - `q11`: (bidder, first bid time) -> (last bid time, bids).
    """

    q5: dict[int, tuple[int, frozenset[int]]]
    q7: dict[int, int]
    q11: dict[tuple[int, int], tuple[int, int]]

    def rows(self, query: str) -> int:
        """How many result rows a correct run of `query` writes (q5: one per window)."""
        found: dict[str, int] = {"q5": len(self.q5), "q7": len(self.q7), "q11": len(self.q11)}
        return found[query]


def expected_results(bids: Bids) -> Expected:
    table = pa.table(
        {
            "auction": bids.auction,
            "bidder": bids.bidder,
            "price": bids.price,
            "t": bids.date_time,
        }
    )
    with duckdb.connect() as con:
        con.register("bids", table)
        q5 = con.execute(
            f"""
            WITH assigned AS (
              SELECT auction, unnest(generate_series(
                ((t - {HOP_SIZE_MS}) // {HOP_SLIDE_MS} + 1) * {HOP_SLIDE_MS},
                t // {HOP_SLIDE_MS} * {HOP_SLIDE_MS}, {HOP_SLIDE_MS})) AS start
              FROM bids),
            counted AS (SELECT start, auction, count(*) AS num FROM assigned GROUP BY ALL),
            tops AS (SELECT start, max(num) AS top FROM counted GROUP BY start)
            SELECT start, top, list(auction) FROM counted JOIN tops USING (start)
            WHERE num = top GROUP BY start, top
            """
        ).fetchall()
        q7 = con.execute(
            f"SELECT t // {TUMBLE_MS} * {TUMBLE_MS} AS start, max(price) FROM bids GROUP BY start"
        ).fetchall()
        q11 = con.execute(
            f"""
            WITH marked AS (
              SELECT bidder, t, CASE WHEN t - lag(t) OVER (PARTITION BY bidder ORDER BY t)
                <= {GAP_MS} THEN 0 ELSE 1 END AS opens FROM bids),
            numbered AS (
              SELECT bidder, t, sum(opens) OVER (PARTITION BY bidder ORDER BY t
                ROWS UNBOUNDED PRECEDING) AS session FROM marked)
            SELECT bidder, min(t), max(t), count(*) FROM numbered GROUP BY bidder, session
            """
        ).fetchall()
    return Expected(
        q5={start: (top, frozenset(auctions)) for start, top, auctions in q5},
        q7=dict(q7),
        q11={(bidder, first): (last, count) for bidder, first, last, count in q11},
    )

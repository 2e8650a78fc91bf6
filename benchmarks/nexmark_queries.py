"""The Nexmark queries of the benchmark, in Mars's task language and in Flink SQL.

Mars's texts are the queries as a user writes them. Flink's follow the Nexmark project's own
queries (nexmark/nexmark, `nexmark-flink/src/main/resources/queries/`) where they ask the same
question, and say where they differ:

- q5 (hot items): Nexmark's q5 joins the per-auction counts of each 10 s window sliding by 2 s
  to their maximum and keeps every auction at it (ties included); Mars's `ORDER BY num DESC
  LIMIT 1` keeps one, so Flink runs its window Top-N (`ROW_NUMBER() OVER (PARTITION BY
  window_start, window_end ORDER BY num DESC) <= 1` over the HOP aggregate), the same question.
- q7 (highest price): Nexmark's q7 also joins the maximum back to the bids that hold it; Mars's
  query asks only the maximum per 10 s tumbling window, and so does Flink's here.
- q11 (user sessions): Nexmark's own text, `GROUP BY bidder, SESSION(dateTime, 10 s)`.

Flink reads the epoch-ms `dateTime` into the time attribute `ts` (`benchmarks.nexmark_flink`);
window bounds go out as text (`CAST(... AS STRING)`, the session's zone is UTC) and are read
back to epoch ms by `benchmarks.nexmark_check`.
"""

from __future__ import annotations

from dataclasses import dataclass

GAP_S = 10  # q11's session gap
MARS_OPTIONS = "WITH (event_time = 'dateTime', event_time_format = 'epoch_ms')"


@dataclass(frozen=True, slots=True, kw_only=True)
class NexmarkQuery:
    """One query: its Mars text (`{topic}` for the source), Flink's SELECT over table `bids`
    and the columns of Flink's sink (name, SQL type), in the SELECT's order."""

    name: str
    title: str
    mars: str
    flink_select: str
    flink_columns: tuple[tuple[str, str], ...]

    def mars_sql(self, topic: str) -> str:
        return self.mars.format(topic=topic)


Q5 = NexmarkQuery(
    name="q5",
    title="hot items: the auction with the most bids per 10 s window sliding by 2 s",
    mars=(
        "SELECT auction, count(*) AS num FROM {topic} GROUP BY auction "
        f"WINDOWING 10 s SLIDE 2 s ORDER BY num DESC LIMIT 1 {MARS_OPTIONS}"
    ),
    flink_select=(
        "SELECT CAST(window_start AS STRING), auction, num FROM (\n"
        "  SELECT *, ROW_NUMBER() OVER (\n"
        "    PARTITION BY window_start, window_end ORDER BY num DESC) AS rownum\n"
        "  FROM (\n"
        "    SELECT window_start, window_end, auction, COUNT(*) AS num\n"
        "    FROM TABLE(HOP(TABLE bids, DESCRIPTOR(ts), INTERVAL '2' SECOND, "
        "INTERVAL '10' SECOND))\n"
        "    GROUP BY window_start, window_end, auction))\n"
        "WHERE rownum <= 1"
    ),
    flink_columns=(("window_start", "STRING"), ("auction", "BIGINT"), ("num", "BIGINT")),
)
Q7 = NexmarkQuery(
    name="q7",
    title="highest price: the largest bid per 10 s tumbling window",
    mars=f"SELECT max(price) AS maxprice FROM {{topic}} WINDOWING 10 s {MARS_OPTIONS}",
    flink_select=(
        "SELECT CAST(window_start AS STRING), MAX(price) AS maxprice\n"
        "FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(ts), INTERVAL '10' SECOND))\n"
        "GROUP BY window_start, window_end"
    ),
    flink_columns=(("window_start", "STRING"), ("maxprice", "BIGINT")),
)
Q11 = NexmarkQuery(
    name="q11",
    title=f"user sessions: bids per bidder and session ({GAP_S} s gap)",
    mars=(
        "SELECT bidder, count(*) AS bid_count FROM {topic} GROUP BY bidder "
        f"WINDOWING SESSION {GAP_S} s {MARS_OPTIONS}"
    ),
    flink_select=(
        "SELECT bidder, COUNT(*) AS bid_count,\n"
        f"  CAST(SESSION_START(ts, INTERVAL '{GAP_S}' SECOND) AS STRING) AS starttime,\n"
        f"  CAST(SESSION_END(ts, INTERVAL '{GAP_S}' SECOND) AS STRING) AS endtime\n"
        f"FROM bids GROUP BY bidder, SESSION(ts, INTERVAL '{GAP_S}' SECOND)"
    ),
    flink_columns=(
        ("bidder", "BIGINT"),
        ("bid_count", "BIGINT"),
        ("starttime", "STRING"),
        ("endtime", "STRING"),
    ),
)
QUERIES = {query.name: query for query in (Q5, Q7, Q11)}

"""The Flink SQL query of one Nexmark query over the bids topic (`benchmarks.flink_json` makes
and runs its job).

The source: the bids topic, JSON, `ts AS TO_TIMESTAMP_LTZ(dateTime, 3)` with `WATERMARK FOR ts
AS ts` (the sentinel bid of every partition closes the last data window); the sink: the query's
columns, exactly once, read with read_committed.
"""

from __future__ import annotations

from benchmarks.flink_json import FlinkQuery
from benchmarks.nexmark_queries import NexmarkQuery

BID_COLUMNS = (
    ("auction", "BIGINT"),
    ("bidder", "BIGINT"),
    ("price", "BIGINT"),
    ("channel", "STRING"),
    ("url", "STRING"),
    ("dateTime", "BIGINT"),
    ("extra", "STRING"),
)


def flink_query(query: NexmarkQuery) -> FlinkQuery:
    """`query`'s Flink SELECT over the table `bids`."""
    return FlinkQuery(
        table="bids",
        columns=BID_COLUMNS,
        time="TO_TIMESTAMP_LTZ(`dateTime`, 3)",
        select=query.flink_select,
        sink_columns=query.flink_columns,
    )

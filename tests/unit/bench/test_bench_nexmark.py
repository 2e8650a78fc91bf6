"""Experiment 12's pure parts: the queries in both dialects, the Flink job file, the DuckDB
oracle on hand-made bids, the check of Mars's and Flink's rows, and the report section."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from benchmarks.codec import from_json
from benchmarks.exp_nexmark import NexmarkResult
from benchmarks.flink_json import FlinkJsonJob, job_file
from benchmarks.nexmark_check import check, data_rows, flink_time_ms, keyed_rows
from benchmarks.nexmark_flink import flink_query
from benchmarks.nexmark_oracle import Expected, expected_results
from benchmarks.nexmark_queries import QUERIES
from benchmarks.report import SECTIONS, render_report
from benchmarks.report_nexmark import NEXMARK_HEADING, nexmark_section
from benchmarks.runner import BenchConfig
from devtools.gen.nexmark import SENTINEL_ID, Bids
from mars.sql import parse_task

T0 = 1_700_000_000_000  # a multiple of 10 s
JAR = Path("/jars/flink-sql-connector-kafka-5.0.0-2.2.jar")


def bids(rows: list[tuple[int, int, int, int]]) -> Bids:
    """(auction, bidder, price, dateTime) rows as generated columns."""
    column = [np.array([row[i] for row in rows], dtype=np.int64) for i in range(4)]
    zeros = np.zeros(len(rows), dtype=np.int64)
    return Bids(
        auction=column[0],
        bidder=column[1],
        price=column[2],
        date_time=column[3],
        channel=zeros,
        extra=zeros,
        channel_names=("Google",),
        extras=("",),
    )


# -- the queries ------------------------------------------------------------------------------


def test_mars_parses_the_three_queries_as_meant() -> None:
    q5, q7, q11 = (parse_task(QUERIES[n].mars_sql("bids"), task_id="t") for n in QUERIES)
    assert (q5.window.size_ms, q5.window.slide_ms, q5.window.grace_ms) == (10_000, 2_000, 0)
    assert q5.top_k is not None and (q5.top_k.limit, q5.top_k.descending) == (1, True)
    assert [g.name for g in q5.group_keys] == ["auction"]
    assert q7.group_keys == () and q7.window.size_ms == q7.window.slide_ms == 10_000
    assert [a.alias for a in q7.aggregates] == ["maxprice"]
    assert q11.window.session and q11.window.size_ms == 10_000
    for spec in (q5, q7, q11):
        assert spec.event_time.field == "dateTime" and spec.event_time.format.value == "epoch_ms"


def test_the_flink_job_reads_json_bids_with_a_zero_delay_watermark() -> None:
    job = FlinkJsonJob(
        query=flink_query(QUERIES["q11"]),
        bootstrap="127.0.0.1:9092",
        topic="bids_ab",
        output="flink-q11-ab",
        run_id="q11-ab",
        parallelism=2,
    )
    found = job_file(job, jar=JAR)
    source, sink = found["statements"]
    assert source.startswith("CREATE TABLE bids (\n")
    assert "`dateTime` BIGINT" in source and "ts AS TO_TIMESTAMP_LTZ(`dateTime`, 3)" in source
    assert "WATERMARK FOR ts AS ts\n" in source and "'format' = 'json'" in source
    assert "'topic' = 'bids_ab'" in source and "'scan.startup.mode' = 'earliest-offset'" in source
    assert "`bidder` BIGINT,\n  `bid_count` BIGINT,\n  `starttime` STRING" in sink
    assert "'sink.delivery-guarantee' = 'exactly-once'" in sink
    assert found["insert"].startswith("INSERT INTO sink\nSELECT bidder, COUNT(*)")
    assert "SESSION(ts, INTERVAL '10' SECOND)" in found["insert"]
    assert found["configuration"]["table.local-time-zone"] == "UTC"
    assert found["configuration"]["parallelism.default"] == "2"


def test_flinks_windows_are_the_mars_queries_windows() -> None:
    assert "HOP(TABLE bids, DESCRIPTOR(ts), INTERVAL '2' SECOND, INTERVAL '10' SECOND)" in (
        QUERIES["q5"].flink_select
    )
    assert "rownum <= 1" in QUERIES["q5"].flink_select
    assert "TUMBLE(TABLE bids, DESCRIPTOR(ts), INTERVAL '10' SECOND)" in QUERIES["q7"].flink_select


def test_the_size_of_the_experiment_is_a_parameter() -> None:
    def build(quick: bool, records: int | None) -> int:
        config = BenchConfig.build(
            quick=quick,
            runs=None,
            experiments=("nexmark",),
            command="mars bench",
            nexmark_records=records,
        )
        records: int = config.of("nexmark").records
        return records

    assert (build(False, None), build(True, None), build(True, 5_000)) == (
        1_000_000,
        100_000,
        5_000,
    )


# -- the oracle -------------------------------------------------------------------------------


def test_hopping_windows_are_half_open() -> None:
    # auction 1 at T0 + 9.999 s and T0 + 10 s; auction 2 twice at T0 + 10 s
    found = expected_results(
        bids([(1, 1, 5, T0 + 9_999), (1, 1, 5, T0 + 10_000), (2, 1, 5, T0 + 10_000)] * 1)
    )
    window = dict(found.q5)
    # [T0, T0 + 10 s) holds only the first bid
    assert window[T0] == (1, frozenset({1}))
    # [T0 + 2 s, T0 + 12 s) holds all three: auction 1 twice, auction 2 once
    assert window[T0 + 2_000] == (2, frozenset({1}))
    # T0 + 9.999 s is in the windows starting T0 .. T0 + 8 s, T0 + 10 s in T0 + 2 s .. T0 + 10 s
    assert sorted(window) == [T0 + 2_000 * k for k in range(6)]


def test_tied_auctions_are_all_valid_tops() -> None:
    found = expected_results(bids([(1, 1, 5, T0 + 1), (2, 1, 5, T0 + 1)]))
    assert found.q5[T0] == (1, frozenset({1, 2}))


def test_the_highest_price_per_tumbling_window() -> None:
    found = expected_results(bids([(1, 1, 5, T0), (1, 1, 9, T0 + 9_999), (1, 1, 7, T0 + 10_000)]))
    assert found.q7 == {T0: 9, T0 + 10_000: 7}


def test_sessions_join_bids_at_most_the_gap_apart() -> None:
    found = expected_results(
        bids(
            [
                (1, 7, 1, T0),
                (1, 7, 1, T0),  # equal times: the same session
                (1, 7, 1, T0 + 10_000),  # exactly the gap: the same session
                (1, 7, 1, T0 + 20_001),  # more than the gap: a new one
                (1, 8, 1, T0 + 5_000),  # another bidder: its own
            ]
        )
    )
    assert found.q11 == {
        (7, T0): (T0 + 10_000, 3),
        (7, T0 + 20_001): (T0 + 20_001, 1),
        (8, T0 + 5_000): (T0 + 5_000, 1),
    }
    # q5: the windows starting T0 - 8 s .. T0 + 20 s, every 2 s
    assert (found.rows("q5"), found.rows("q7"), found.rows("q11")) == (15, 3, 3)


# -- the check --------------------------------------------------------------------------------

EXPECTED = Expected(
    q5={T0: (3, frozenset({1, 2}))},
    q7={T0: 9},
    q11={(7, T0): (T0 + 10_000, 3)},
)


def test_flinks_time_text_is_epoch_ms() -> None:
    assert flink_time_ms("2023-11-14 22:13:20") == T0
    assert flink_time_ms("2023-11-14 22:13:20.5") == T0 + 500
    assert flink_time_ms("2023-11-14 22:13:30.042") == T0 + 10_042


def test_mars_rows_that_match_are_exact_and_any_tied_top_counts() -> None:
    for auction in (1, 2):
        rows = [{"window_start": T0, "window_end": T0 + 10_000, "auction": auction, "num": 3}]
        assert check("q5", keyed_rows("mars", "q5", rows), EXPECTED).exact
    sessions = [{"window_start": T0, "window_end": T0 + 10_000, "bidder": 7, "bid_count": 3}]
    assert check("q11", keyed_rows("mars", "q11", sessions), EXPECTED).exact


def test_flinks_session_end_is_the_last_bid_plus_the_gap() -> None:
    rows = [
        {
            "bidder": 7,
            "bid_count": 3,
            "starttime": "2023-11-14 22:13:20.000",
            "endtime": "2023-11-14 22:13:40.000",
        }
    ]
    assert check("q11", keyed_rows("flink", "q11", rows), EXPECTED).exact
    q7 = [{"window_start": "2023-11-14 22:13:20", "maxprice": 9}]
    assert check("q7", keyed_rows("flink", "q7", q7), EXPECTED).exact


@pytest.mark.parametrize(
    ("rows", "problem"),
    [
        ([], "missing"),
        ([{"window_start": T0, "auction": 3, "num": 3}], "wrong"),
        ([{"window_start": T0, "auction": 1, "num": 2}], "wrong"),
        ([{"window_start": T0, "auction": 1, "num": 3}] * 2, "duplicates"),
        (
            [
                {"window_start": T0, "auction": 1, "num": 3},
                {"window_start": T0 + 2_000, "auction": 1, "num": 3},
            ],
            "extra",
        ),
    ],
)
def test_every_kind_of_difference_is_caught(rows: list[dict[str, Any]], problem: str) -> None:
    verdict = check("q5", keyed_rows("mars", "q5", rows), EXPECTED)
    assert not verdict.exact and verdict.as_dict()[problem] >= 1 and verdict.first_problem


def test_the_sentinels_rows_are_left_out() -> None:
    rows = [
        {"window_start": T0, "window_end": T0, "bidder": 7, "bid_count": 1},
        {"window_start": T0 + 99, "window_end": T0 + 99, "bidder": SENTINEL_ID, "bid_count": 4},
        {"window_start": T0 + 10**8, "window_end": T0 + 10**8, "bidder": 7, "bid_count": 1},
    ]
    kept = data_rows("q11", keyed_rows("mars", "q11", rows), data_end_ms=T0 + 1_000)
    assert kept == [((7, T0), (T0, 1))]


# -- the report -------------------------------------------------------------------------------


def run(seconds: float, *, exact: bool = True) -> dict[str, Any]:
    return {
        "seconds": seconds,
        "records_per_s": 100_000 / seconds,
        "records_per_cpu_s": 50_000 / seconds,
        "check": {"exact": exact, "rows": 904, "first_problem": "" if exact else "(1, 2) twice"},
    }


def system(*runs: dict[str, Any]) -> dict[str, Any]:
    def summary(name: str, scale: float = 1.0) -> dict[str, Any]:
        values = [r[name] * scale for r in runs] or [math.nan]
        return {"runs": values, "median": values[0], "min": min(values), "max": max(values)}

    return {
        "runs": list(runs),
        "exact": all(r["check"]["exact"] for r in runs),
        "seconds": summary("seconds"),
        "records_per_s": summary("records_per_s"),
        "records_per_s_per_core": summary("records_per_s", 0.5),
        "records_per_cpu_s": summary("records_per_cpu_s"),
    }


NEXMARK = {
    "records": 100_000,
    "partitions": 4,
    "span_s": 1800,
    "seed": 7,
    "mean_bytes": 169.0,
    "distinct_times": 22_000,
    "oracle_s": 0.4,
    "config": {"max_burst": 8, "hot_auctions": 4, "hot_bidders": 50, "hot_period_s": 30},
    "cores": 2,
    "mappers": 2,
    "reducers": 1,
    "flink_parallelism": 2,
    "queries": {
        name: {
            "title": query.title,
            "mars_sql": query.mars_sql("bids"),
            "flink_sql": query.flink_select,
            "expected_rows": 904,
            "mars": system(run(2.0)),
            "flink": system(run(10.0, exact=name != "q11")),
        }
        for name, query in QUERIES.items()
    },
    "notes": [],
}


def section(found: dict[str, Any]) -> str:
    """The section of `found`, a result in its results-file form."""
    return nexmark_section(from_json(NexmarkResult, found))


def test_the_section_shows_each_query_systems_check_and_figures() -> None:
    text = section(NEXMARK)
    assert text.startswith("Run it alone: `mars bench --experiments nexmark")
    assert "| q5 | Mars | **exact** | 904 of 904 | 2.0 | 50,000 | 25,000 | 25,000 |  |" in text
    assert "| q5 | Flink SQL | **exact** | 904 of 904 | 10.0 | 10,000 | 5,000 | 5,000 | ~22K |" in (
        text
    )
    assert "| q11 | Flink SQL | **NOT EXACT** (0/1) |" in text and "~39K" in text
    assert "- q11 Flink SQL run 1: (1, 2) twice" in text
    assert "WINDOWING SESSION 10 s" in text and "ROW_NUMBER() OVER" in text


def test_the_report_carries_the_section_and_a_run_without_it_says_so() -> None:
    assert SECTIONS["nexmark"] == (NEXMARK_HEADING,)
    assert NEXMARK_HEADING in render_report({"nexmark": NEXMARK}, images={})
    assert f"{NEXMARK_HEADING}\n\nNot run.\n" in render_report({}, images={})
    queries: dict[str, Any] = NEXMARK["queries"]  # type: ignore[assignment]
    missing = {**NEXMARK, "queries": {"q7": {**queries["q7"], "flink": system()}}}
    assert "| q7 | Flink SQL | not run |" in section(missing)


def test_late_or_bad_records_in_a_mars_run_are_noted() -> None:
    queries: dict[str, Any] = NEXMARK["queries"]  # type: ignore[assignment]
    late = {**run(2.0), "late": 3, "bad": 0}
    found = {**NEXMARK, "queries": {"q7": {**queries["q7"], "mars": system(late)}}}
    assert "- q7 Mars run 1: 3 late, 0 bad records" in section(found)


def test_mars_cpu_by_process_and_records_not_all_read_are_shown() -> None:
    queries: dict[str, Any] = NEXMARK["queries"]  # type: ignore[assignment]
    measured = {
        **run(2.0),
        "cpu_by_role_s": {"mappers": 1.5, "reducers": 0.25, "redis": 0.05},
        "records_in": 99_000,
    }
    found = {**NEXMARK, "queries": {"q5": {**queries["q5"], "mars": system(measured)}}}
    text = section(found)
    assert "Mars's CPU seconds by process (medians): q5 mappers 1.5, reducers 0.2, redis 0.1." in (
        text
    )
    assert "- q5 Mars run 1: 99,000 records in, 100,004 in the topic" in text

"""COUNT_IF(cond) and `AGG(x) FILTER (WHERE cond)`: parsed into plain aggregates over
`CASE WHEN cond THEN x END`, named after what they count, and exact for every aggregate."""

from __future__ import annotations

import json
import math
import random
from typing import Any

import pytest

from mars.aggregates import aggregates_for
from mars.engine.records import SourceRecord
from mars.sql import TaskError, parse_task
from mars.tasks.spec import AggFunc, TaskSpec, TopK
from tests.unit.engine.engine_helpers import run_in_batches

WINDOW = "WINDOWING 4 ms WITH (event_time = 'ts', event_time_format = 'epoch_ms')"


def aggregates_of(sql: str) -> list[tuple[AggFunc, str | None, str]]:
    spec = parse_task(sql, task_id="t")
    return [(a.func, a.argument, a.alias) for a in spec.aggregates]


def test_count_if_and_a_filtered_count_star_are_one_call() -> None:
    spec = parse_task(
        "SELECT k, count_if(type = 'dns'), COUNT(*) FILTER (WHERE type = 'dns') AS dns "
        "FROM S GROUP BY k HAVING COUNT(1) FILTER (WHERE type = 'dns') > 2 WINDOWING 1 s",
        task_id="t",
    )
    assert [(a.func, a.argument, a.alias) for a in spec.aggregates] == [
        (AggFunc.COUNT, "CASE WHEN type = 'dns' THEN 1 END", "dns")
    ]
    assert [o.name for o in spec.outputs] == ["k", "count_if_type_dns", "dns"]
    assert spec.having == "dns > 2"


@pytest.mark.parametrize(
    ("call", "func", "argument", "alias"),
    [
        ("count(*)", AggFunc.COUNT, "CASE WHEN a > 1 THEN 1 END", "count_if_a_1"),
        ("count(x)", AggFunc.COUNT, "CASE WHEN a > 1 THEN x END", "count_x_if_a_1"),
        ("sum(x)", AggFunc.SUM, "CASE WHEN a > 1 THEN x END", "sum_x_if_a_1"),
        ("min(x)", AggFunc.MIN, "CASE WHEN a > 1 THEN x END", "min_x_if_a_1"),
        ("max(x)", AggFunc.MAX, "CASE WHEN a > 1 THEN x END", "max_x_if_a_1"),
        ("avg(x + 1)", AggFunc.AVG, "CASE WHEN a > 1 THEN x + 1 END", "avg_x_1_if_a_1"),
        (
            "count(DISTINCT x)",
            AggFunc.COUNT_DISTINCT,
            "CASE WHEN a > 1 THEN x END",
            "count_distinct_x_if_a_1",
        ),
        (
            "approx_count_distinct(x)",
            AggFunc.APPROX_COUNT_DISTINCT,
            "CASE WHEN a > 1 THEN x END",
            "approx_count_distinct_x_if_a_1",
        ),
        ("stddev(x)", AggFunc.STDDEV_SAMP, "CASE WHEN a > 1 THEN x END", "stddev_samp_x_if_a_1"),
        ("first(x)", AggFunc.FIRST, "CASE WHEN a > 1 THEN x END", "first_x_if_a_1"),
        ("last(x)", AggFunc.LAST, "CASE WHEN a > 1 THEN x END", "last_x_if_a_1"),
    ],
)
def test_filter_on_each_aggregate_kind(call: str, func: AggFunc, argument: str, alias: str) -> None:
    sql = f"SELECT k, {call} FILTER (WHERE a > 1) FROM S GROUP BY k WINDOWING 1 s"
    assert aggregates_of(sql) == [(func, argument, alias)]


def test_a_filtered_count_if_joins_both_conditions() -> None:
    sql = "SELECT count_if(a = 1) FILTER (WHERE b = 2 OR c) FROM S WINDOWING 1 s"
    assert aggregates_of(sql) == [
        (AggFunc.COUNT, "CASE WHEN (b = 2 OR c) AND a = 1 THEN 1 END", "count_if_b_2_or_c_and_a_1")
    ]


def test_in_expressions_having_and_top_k() -> None:
    spec = parse_task(
        "SELECT k, sum(bytes) FILTER (WHERE type = 'dns') / count(*) AS dns_share FROM S "
        "GROUP BY k HAVING count_if(type = 'dns') > 0 "
        "ORDER BY sum(bytes) FILTER (WHERE type = 'dns') DESC LIMIT 3 WINDOWING 1 s",
        task_id="t",
    )
    assert [a.alias for a in spec.aggregates] == [
        "sum_bytes_if_type_dns",
        "count_star",
        "count_if_type_dns",
    ]
    assert [o.expression for o in spec.outputs] == ["k", "sum_bytes_if_type_dns / count_star"]
    assert spec.having == "count_if_type_dns > 0"
    assert spec.top_k == TopK(order_by="sum_bytes_if_type_dns", descending=True, limit=3)


# (sql, fragment of the message, text found at the error's position)
ERRORS = [
    (
        "SELECT k, sum(x) FILTER (WHERE max(y) > 1) FROM S GROUP BY k WINDOWING 1 s",
        "aggregate functions are not allowed in FILTER's condition",
        "max(y)",
    ),
    (
        "SELECT k, count_if(count(y) > 1) FROM S GROUP BY k WINDOWING 1 s",
        "aggregate functions are not allowed in COUNT_IF's condition",
        "count(y)",
    ),
    (
        "SELECT k, upper(x) FILTER (WHERE a) FROM S GROUP BY k WINDOWING 1 s",
        "FILTER (WHERE ...) applies only to an aggregate function",
        "upper(x)",
    ),
    (
        "SELECT k, count_if(a, b) FROM S GROUP BY k WINDOWING 1 s",
        "COUNT_IF takes exactly one condition",
        "count_if(a, b)",
    ),
    (
        "SELECT k, count_if(DISTINCT a) FROM S GROUP BY k WINDOWING 1 s",
        "COUNT_IF takes exactly one condition",
        "count_if(",
    ),
    (
        "SELECT k, sum(x) FILTER (WHERE zz(a)) FROM S GROUP BY k WINDOWING 1 s",
        "unknown function 'zz'",
        "zz(a)",
    ),
    (
        "SELECT k FROM S WHERE count_if(a) > 1 GROUP BY k WINDOWING 1 s",
        "aggregate functions are not allowed in WHERE",
        "count_if(a)",
    ),
]


@pytest.mark.parametrize(("sql", "message", "at"), ERRORS)
def test_errors_point_at_the_culprit(sql: str, message: str, at: str) -> None:
    with pytest.raises(TaskError) as caught:
        parse_task(sql, task_id="t")
    error = caught.value
    assert message in error.message
    assert error.position is not None and sql[error.position :].startswith(at), error.position


# --- exactness: a FILTER gives what a WHERE gives, for every aggregate kind ------------------

EXACT_KINDS = [
    "count(*)",
    "count(v)",
    "sum(v)",
    "min(v)",
    "max(u)",
    "avg(v)",
    "count(DISTINCT u)",
    "approx_count_distinct(u)",
    "var_pop(v)",
    "var_samp(v)",
    "stddev_pop(v)",
    "stddev_samp(v)",
    "first(v)",
    "last(u)",
]


def results(spec: TaskSpec, records: list[SourceRecord]) -> dict[tuple[int, Any], Any]:
    """(window start, k) -> the value of the task's one aggregate, batches of 7 records."""
    windows, _, _, _ = run_in_batches(spec, records, [7])
    (aggregate,) = aggregates_for(spec.aggregates)
    return {
        (start, key[0]): aggregate.result(states[0])
        for start, groups in windows.items()
        for key, states in groups.items()
    }


def stream(seed: int) -> list[SourceRecord]:
    rng = random.Random(seed)
    records = []
    for offset in range(300):
        row = {
            "ts": offset // 3 + rng.choice([0, 0, 0, -1]),  # equal times and a little disorder
            "k": rng.choice(["a", "b"]),
            "v": rng.choice([None, rng.randint(-9, 9)]),
            "u": rng.choice(["x", "y", "zz", None]),
            "type": rng.choice(["dns", "dns", "http", None]),
        }
        value = json.dumps(row).encode()
        records.append(SourceRecord(partition=offset % 2, offset=offset // 2, value=value))
    return records


@pytest.mark.parametrize("call", EXACT_KINDS)
def test_a_filter_equals_the_same_aggregate_over_the_records_a_where_keeps(call: str) -> None:
    records = stream(len(call))
    filtered = parse_task(
        f"SELECT k, {call} FILTER (WHERE type = 'dns') FROM S GROUP BY k {WINDOW}", task_id="t"
    )
    kept = parse_task(
        f"SELECT k, {call} FROM S WHERE type = 'dns' GROUP BY k {WINDOW}", task_id="t"
    )
    got, want = results(filtered, records), results(kept, records)
    (aggregate,) = aggregates_for(filtered.aggregates)
    empty = aggregate.result(aggregate.initial())
    assert set(want) <= set(got) and len(want) > 10
    for group, value in got.items():
        expected = want.get(group, empty)  # no record passed: the empty group's value
        if isinstance(value, float):
            assert math.isclose(value, expected, rel_tol=1e-9, abs_tol=1e-12), group
        else:
            assert value == expected, group

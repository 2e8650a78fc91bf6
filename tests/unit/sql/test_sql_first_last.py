"""FIRST / LAST (and FIRST_VALUE / LAST_VALUE) in SQL; ksqlDB's *_BY_OFFSET rejected."""

from __future__ import annotations

import pytest

from mars.sql import TaskError, parse_task
from mars.tasks.spec import AggFunc, TopK


@pytest.mark.parametrize(
    ("call", "func"),
    [
        ("first", AggFunc.FIRST),
        ("FIRST_VALUE", AggFunc.FIRST),
        ("last", AggFunc.LAST),
        ("last_value", AggFunc.LAST),
    ],
)
def test_each_name_parses_to_its_function(call: str, func: AggFunc) -> None:
    spec = parse_task(f"SELECT k, {call}(upper(x)) FROM S GROUP BY k WINDOWING 1 s", task_id="t")
    (aggregate,) = spec.aggregates
    assert (aggregate.func, aggregate.argument, aggregate.alias) == (
        func,
        "UPPER(x)",
        f"{func.value}_upper_x",
    )


def test_usable_in_having_and_top_k_like_any_aggregate() -> None:
    spec = parse_task(
        "SELECT k, last(price) AS close FROM S GROUP BY k HAVING last_value(price) > first(price) "
        "ORDER BY close DESC LIMIT 2 WINDOWING 1 s",
        task_id="t",
    )
    assert [(a.func, a.argument, a.alias) for a in spec.aggregates] == [
        (AggFunc.LAST, "price", "close"),
        (AggFunc.FIRST, "price", "first_price"),
    ]
    assert spec.having == "close > first_price"
    assert spec.top_k == TopK(order_by="close", descending=True, limit=2)


@pytest.mark.parametrize(
    ("name", "instead"), [("EARLIEST_BY_OFFSET", "FIRST"), ("latest_by_offset", "LAST")]
)
def test_offset_aggregates_are_rejected_with_a_pointer_to_first_and_last(
    name: str, instead: str
) -> None:
    sql = f"SELECT k, count(*) AS n, {name}(x) FROM S GROUP BY k WINDOWING 1 s"
    with pytest.raises(TaskError) as caught:
        parse_task(sql, task_id="t")
    assert caught.value.position == sql.index(name)
    assert f"use {instead}(col)" in caught.value.message
    assert "partitions" in caught.value.message


def test_offset_aggregates_in_having_are_rejected_too() -> None:
    sql = "SELECT k, count(*) AS n FROM S GROUP BY k HAVING latest_by_offset(x) > 1 WINDOWING 1 s"
    with pytest.raises(TaskError) as caught:
        parse_task(sql, task_id="t")
    assert caught.value.position == sql.index("latest_by_offset")


@pytest.mark.parametrize(
    ("call", "message"),
    [
        ("first(x, y)", "takes exactly one argument"),
        ("last(DISTINCT x)", "DISTINCT is only supported as COUNT(DISTINCT"),
        ("arg_min(x, y)", "unsupported aggregate function 'arg_min'"),
    ],
)
def test_wrong_calls_are_rejected_at_the_call(call: str, message: str) -> None:
    sql = f"SELECT k, {call} FROM S GROUP BY k WINDOWING 1 s"
    with pytest.raises(TaskError) as caught:
        parse_task(sql, task_id="t")
    assert message in caught.value.message
    # at the call (sqlglot keeps no position for some function names: then its first argument)
    assert caught.value.position is not None
    assert sql.index(call) <= caught.value.position < sql.index(call) + len(call)

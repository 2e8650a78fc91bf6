"""APPROX_PERCENTILE / APPROX_MEDIAN / TOPK in SQL: their spellings, parameters, errors and
where a list-valued aggregate may not go."""

from __future__ import annotations

import json

import pytest

from mars.sql import TaskError, parse_task
from mars.tasks.spec import AggFunc, TopK

TAIL = " FROM S GROUP BY k WINDOWING 1 s"


def calls(sql: str) -> list[tuple[AggFunc, str | None, tuple[float, ...], str]]:
    spec = parse_task(sql, task_id="t")
    return [(a.func, a.argument, a.parameters, a.alias) for a in spec.aggregates]


@pytest.mark.parametrize(
    ("call", "func", "parameters"),
    [
        ("approx_percentile(x + 1, 0.99)", AggFunc.APPROX_PERCENTILE, (0.99,)),
        ("PERCENTILE_APPROX(x + 1, 0.99)", AggFunc.APPROX_PERCENTILE, (0.99,)),  # Spark
        ("approx_quantile(x + 1, 0.99)", AggFunc.APPROX_PERCENTILE, (0.99,)),  # DuckDB
        ("approx_percentile(x + 1, 1)", AggFunc.APPROX_PERCENTILE, (1.0,)),
        ("approx_percentile(x + 1, (1e-2))", AggFunc.APPROX_PERCENTILE, (0.01,)),
        ("approx_median(x + 1)", AggFunc.APPROX_PERCENTILE, (0.5,)),
        ("approx_percentile(x + 1, [0.5, 0.9])", AggFunc.APPROX_PERCENTILES, (0.5, 0.9)),
        ("approx_percentile(x + 1, ARRAY[0.5, 0.9])", AggFunc.APPROX_PERCENTILES, (0.5, 0.9)),
        ("approx_quantile(x + 1, [0.5])", AggFunc.APPROX_PERCENTILES, (0.5,)),
        ("topk(x + 1, 3)", AggFunc.TOPK, (3.0,)),
        ("APPROX_TOP_K(x + 1, 3)", AggFunc.TOPK, (3.0,)),  # DuckDB
    ],
)
def test_each_spelling_parses_to_its_function(
    call: str, func: AggFunc, parameters: tuple[float, ...]
) -> None:
    ((got_func, argument, got_parameters, _),) = calls(f"SELECT k, {call}{TAIL}")
    assert (got_func, argument, got_parameters) == (func, "x + 1", parameters)


def test_generated_names_carry_the_parameters() -> None:
    sql = (
        f"SELECT k, approx_percentile(x, 0.99), approx_percentile(x, [0.5, 0.9]), topk(s, 5){TAIL}"
    )
    assert [alias for *_, alias in calls(sql)] == [
        "approx_percentile_x_0_99",
        "approx_percentiles_x_0_5_0_9",
        "topk_s_5",
    ]


def test_the_median_and_its_percentile_are_one_call() -> None:
    sql = (
        "SELECT k, approx_median(x) AS med FROM S GROUP BY k "
        "HAVING approx_percentile(x, 0.5) > 10 ORDER BY approx_quantile(x, 0.5) DESC LIMIT 2 "
        "WINDOWING 1 s"
    )
    spec = parse_task(sql, task_id="t")
    assert [(a.func, a.parameters, a.alias) for a in spec.aggregates] == [
        (AggFunc.APPROX_PERCENTILE, (0.5,), "med")
    ]
    assert spec.having == "med > 10"
    assert spec.top_k == TopK(order_by="med", descending=True, limit=2)


def test_other_fractions_are_other_calls() -> None:
    sql = f"SELECT k, approx_percentile(x, 0.5) AS a, approx_percentile(x, 0.9) AS b{TAIL}"
    assert [(f, p) for f, _, p, _ in calls(sql)] == [
        (AggFunc.APPROX_PERCENTILE, (0.5,)),
        (AggFunc.APPROX_PERCENTILE, (0.9,)),
    ]


def error(sql: str) -> TaskError:
    with pytest.raises(TaskError) as caught:
        parse_task(sql, task_id="t")
    return caught.value


@pytest.mark.parametrize(
    ("call", "message", "at"),
    [
        ("approx_percentile(x, 1.5)", "between 0 and 1, got 1.5", "approx_percentile"),
        ("approx_percentile(x, -0.1)", "between 0 and 1, got -0.1", "approx_percentile"),
        ("approx_percentile(x, [0.5, 2])", "between 0 and 1, got 2", "approx_percentile"),
        ("approx_percentile(x, [])", "list of fractions is empty", "approx_percentile"),
        ("approx_percentile(x, y)", "a fraction must be a constant number", "y"),
        ("approx_percentile(x, [0.5, y])", "a fraction must be a constant number", "y"),
        ("approx_percentile(x)", "takes a column and a fraction", "approx_percentile"),
        ("approx_percentile(x, 0.5, 0.9)", "takes a column and a fraction", "approx_percentile"),
        ("percentile_approx(x, 0.5, 100)", "takes a column and a fraction", "percentile_approx"),
        ("approx_median(x, 0.3)", "APPROX_MEDIAN takes one argument", "approx_median"),
        ("topk(s, 0)", "whole number from 1 to 1000, got 0", "topk"),
        ("topk(s, 2.5)", "whole number from 1 to 1000, got 2.5", "topk"),
        ("topk(s, -3)", "whole number from 1 to 1000, got -3", "topk"),
        ("topk(s, 1001)", "whole number from 1 to 1000, got 1001", "topk"),
        ("topk(s, '3')", "k must be a constant number", "'3'"),
        ("topk(s)", "TOPK takes a column and k", "topk"),
        ("approx_top_k(s)", "TOPK takes a column and k", "approx_top_k"),
        ("topk(s, 2, 3)", "TOPK takes a column and k", "topk"),
    ],
)
def test_a_wrong_call_is_rejected_at_its_position(call: str, message: str, at: str) -> None:
    sql = f"SELECT k, {call}{TAIL}"
    caught = error(sql)
    assert message in caught.message
    assert caught.position == sql.index(at, len("SELECT k, "))


@pytest.mark.parametrize(
    "call",
    [
        "median(x)",
        "quantile_cont(x, 0.5)",
        "quantile_disc(x, 0.5)",
        "quantile(x, 0.5)",
        "percentile(x, 0.5)",
        "percentile_cont(0.5) WITHIN GROUP (ORDER BY x)",
        "percentile_disc(0.5) WITHIN GROUP (ORDER BY x)",
    ],
)
def test_exact_percentiles_point_to_approx_percentile(call: str) -> None:
    sql = f"SELECT k, {call}{TAIL}"
    caught = error(sql)
    assert "exact percentiles are not supported" in caught.message
    assert "need every value" in caught.message and "APPROX_PERCENTILE(col, p)" in caught.message
    assert caught.position == len("SELECT k, ")


@pytest.mark.parametrize("call", ["topk(s, 2)", "approx_percentile(x, [0.5, 0.9])"])
def test_a_list_cannot_rank_groups(call: str) -> None:
    for order_by in (call, "l"):
        sql = f"SELECT k, {call} AS l FROM S GROUP BY k ORDER BY {order_by} LIMIT 2 WINDOWING 1 s"
        caught = error(sql)
        assert "gives a list" in caught.message
        assert caught.position is not None


@pytest.mark.parametrize(
    ("select", "having"),
    [
        ("topk(s, 2) || 'x'", None),
        ("coalesce(topk(s, 2), 'x')", None),
        ("approx_percentile(v, [0.5]) + 1", None),
        ("topk(s, 2) AS t", "t = 'a'"),
        ("topk(s, 2) AS t", "topk(s, 2) = 'a'"),
        ("count(*)", "topk(s, 2)"),
    ],
)
def test_a_list_is_selected_as_it_is_or_tested_for_null(select: str, having: str | None) -> None:
    clause = f" HAVING {having}" if having else ""
    sql = f"SELECT k, {select} FROM S GROUP BY k{clause} WINDOWING 1 s"
    caught = error(sql)
    assert "gives a list" in caught.message
    where = having if having else select
    assert caught.position == sql.index(where, len("SELECT k, "))


def test_a_list_may_be_tested_for_null_and_a_percentile_computed_with() -> None:
    spec = parse_task(
        "SELECT k, topk(s, 2) AS t, approx_median(v) * 2 AS m2 FROM S GROUP BY k "
        "HAVING t IS NOT NULL AND approx_median(v) + 1 > 2 WINDOWING 1 s",
        task_id="t",
    )
    assert spec.having == "NOT t IS NULL AND approx_percentile_v_0_5 + 1 > 2"
    assert [o.expression for o in spec.outputs] == ["k", "t", "approx_percentile_v_0_5 * 2"]


def test_not_in_where() -> None:
    sql = "SELECT k FROM S WHERE approx_median(x) > 1 GROUP BY k WINDOWING 1 s"
    caught = error(sql)
    assert "not allowed in WHERE" in caught.message
    assert caught.position == sql.index("approx_median")


def test_the_task_record_round_trips_the_parameters() -> None:
    spec = parse_task(
        f"SELECT k, approx_percentile(x, [0.5, 0.99]) AS p, topk(s, 3) AS t{TAIL}", task_id="t"
    )
    again = type(spec).from_json_dict(json.loads(json.dumps(spec.to_json_dict())))
    assert again.aggregates == spec.aggregates

"""VAR_POP, VAR_SAMP, STDDEV_POP, STDDEV_SAMP and the aliases VARIANCE and STDDEV in SQL."""

from __future__ import annotations

import pytest

from mars.sql import TaskError, parse_task
from mars.tasks.spec import AggFunc, TopK


@pytest.mark.parametrize(
    ("call", "func"),
    [
        ("var_pop", AggFunc.VAR_POP),
        ("var_samp", AggFunc.VAR_SAMP),
        ("VARIANCE", AggFunc.VAR_SAMP),
        ("stddev_pop", AggFunc.STDDEV_POP),
        ("STDDEV_SAMP", AggFunc.STDDEV_SAMP),
        ("stddev", AggFunc.STDDEV_SAMP),
    ],
)
def test_each_name_parses_to_its_function(call: str, func: AggFunc) -> None:
    spec = parse_task(f"SELECT k, {call}(x + 1) FROM S GROUP BY k WINDOWING 1 s", task_id="t")
    (aggregate,) = spec.aggregates
    assert (aggregate.func, aggregate.argument) == (func, "x + 1")
    # An alias names the function it stands for: STDDEV(x) and STDDEV_SAMP(x) are one call.
    assert aggregate.alias == f"{func.value}_x_1"


def test_in_having_and_top_k_an_alias_shares_its_call() -> None:
    spec = parse_task(
        "SELECT k, stddev(x) AS sd FROM S GROUP BY k HAVING stddev_samp(x) > 1 "
        "ORDER BY var_pop(x) DESC LIMIT 3 WINDOWING 1 s",
        task_id="t",
    )
    assert [(a.func, a.alias) for a in spec.aggregates] == [
        (AggFunc.STDDEV_SAMP, "sd"),
        (AggFunc.VAR_POP, "var_pop_x"),
    ]
    assert spec.having == "sd > 1"
    assert spec.top_k == TopK(order_by="var_pop_x", descending=True, limit=3)


@pytest.mark.parametrize(
    "call", ["stddev()", "stddev(a, b)", "var_pop()", "variance(a, b)", "stddev_samp(*)"]
)
def test_a_wrong_call_is_rejected_where_sum_s_would_be(call: str) -> None:
    """The error and its position relative to the call are those of the same call of SUM."""
    prefix = "SELECT k, "
    suffix = " FROM S GROUP BY k WINDOWING 1 s"
    errors = []
    for name in (call[: call.index("(")], "sum"):
        text = name + call[call.index("(") :]
        with pytest.raises(TaskError) as caught:
            parse_task(prefix + text + suffix, task_id="t")
        assert caught.value.position is not None
        errors.append((caught.value.message, caught.value.position - len(prefix) - len(name)))
    assert errors[0] == errors[1]


def test_distinct_is_rejected_at_the_call() -> None:
    sql = "SELECT k, stddev(DISTINCT x) FROM S GROUP BY k WINDOWING 1 s"
    with pytest.raises(TaskError) as caught:
        parse_task(sql, task_id="t")
    assert "only supported as COUNT(DISTINCT" in caught.value.message
    assert caught.value.position == sql.index("stddev")

"""Recognises the aggregate calls of the task language and names them.

COUNT(*), COUNT(col), COUNT(DISTINCT col), SUM, MIN, MAX, AVG, APPROX_COUNT_DISTINCT, and
VAR_POP, VAR_SAMP (VARIANCE), STDDEV_POP, STDDEV_SAMP (STDDEV), FIRST, LAST (FIRST_VALUE,
LAST_VALUE), and the sketch aggregates APPROX_PERCENTILE / APPROX_MEDIAN and TOPK
(`mars.sql.sketch_calls`). COUNT_IF and FILTER (WHERE ...) are rewritten before
(`conditional_aggregates`).
Identical calls share one `AggregateCall`; an unaliased call is named from its text
(`count_star`, `sum_bytes`), made unique against the names already taken.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from sqlglot import exp

from mars.sql.errors import TaskError
from mars.sql.positions import node_position
from mars.sql.sketch_calls import read_sketch_call
from mars.tasks.spec import AggFunc

_SIMPLE_AGGREGATES: dict[type[exp.Expr], AggFunc] = {
    exp.Sum: AggFunc.SUM,
    exp.Min: AggFunc.MIN,
    exp.Max: AggFunc.MAX,
    exp.Avg: AggFunc.AVG,
    exp.ApproxDistinct: AggFunc.APPROX_COUNT_DISTINCT,
    # sqlglot reads VAR_SAMP and VARIANCE as one node (Variance), VAR_POP as VariancePop.
    exp.VariancePop: AggFunc.VAR_POP,
    exp.Variance: AggFunc.VAR_SAMP,
    exp.StddevPop: AggFunc.STDDEV_POP,
    exp.StddevSamp: AggFunc.STDDEV_SAMP,
    exp.Stddev: AggFunc.STDDEV_SAMP,
    # By event time (mars.aggregates.first_last); FIRST_VALUE / LAST_VALUE are synonyms.
    exp.First: AggFunc.FIRST,
    exp.FirstValue: AggFunc.FIRST,
    exp.Last: AggFunc.LAST,
    exp.LastValue: AggFunc.LAST,
}


@dataclass(frozen=True, slots=True)
class AggregateRead:
    """One aggregate call as written: its function, argument (None for COUNT(*)) and
    constant parameters."""

    func: AggFunc
    argument: exp.Expr | None
    parameters: tuple[float, ...] = ()


def read_aggregate(node: exp.AggFunc) -> AggregateRead:
    """The function, argument and parameters of one aggregate call."""
    sketch = read_sketch_call(node)
    if sketch is not None:
        return AggregateRead(*sketch)
    func, argument = _read_simple(node)
    return AggregateRead(func, argument)


def _read_simple(node: exp.AggFunc) -> tuple[AggFunc, exp.Expr | None]:
    if isinstance(node, exp.Count):
        argument = node.this
        if argument is None or isinstance(argument, exp.Star):
            return AggFunc.COUNT, None
        if isinstance(argument, exp.Distinct):
            if len(argument.expressions) != 1:
                raise TaskError(
                    "COUNT(DISTINCT ...) takes exactly one expression", position=node_position(node)
                )
            return AggFunc.COUNT_DISTINCT, argument.expressions[0]
        if isinstance(argument, exp.Literal | exp.Boolean):
            return AggFunc.COUNT, None  # COUNT(1) counts rows, like COUNT(*)
        return AggFunc.COUNT, argument
    func = _SIMPLE_AGGREGATES.get(type(node))
    if func is None:
        raise TaskError(
            f"unsupported aggregate function '{node.sql_name().lower()}'; use COUNT, SUM, MIN, "
            "MAX, AVG, COUNT(DISTINCT ...), APPROX_COUNT_DISTINCT, VAR_POP, VAR_SAMP, "
            "STDDEV_POP, STDDEV_SAMP, FIRST, LAST, COUNT_IF, APPROX_PERCENTILE, APPROX_MEDIAN "
            "or TOPK",
            position=node_position(node),
        )
    argument = node.this
    if isinstance(argument, exp.Distinct):
        raise TaskError(
            "DISTINCT is only supported as COUNT(DISTINCT ...)", position=node_position(node)
        )
    if argument is None or node.expressions or len(_arguments(node)) > 1:
        raise TaskError(
            f"{node.sql_name()} takes exactly one argument", position=node_position(node)
        )
    return func, argument


def _arguments(node: exp.Expr) -> list[exp.Expr]:
    return [v for v in node.args.values() if isinstance(v, exp.Expr)]


def default_alias(
    func: AggFunc, argument_sql: str | None, parameters: tuple[float, ...] = ()
) -> str:
    """`count_star`, `sum_bytes`, `count_distinct_sip`, `approx_percentile_bytes_0_99`, ..."""
    argument = "star" if argument_sql is None else sanitized_name(argument_sql)
    suffix = "".join("_" + re.sub(r"[^a-z0-9]+", "_", f"{p:g}").strip("_") for p in parameters)
    return f"{func.value}_{argument}{suffix}"


def sanitized_name(sql: str) -> str:
    """A column name made of an expression's text: `UPPER(type)` -> `upper_type`."""
    name = re.sub(r"[^a-z0-9]+", "_", sql.lower()).strip("_")
    if not name or name[0].isdigit():
        name = f"expr_{name}".rstrip("_")
    return name


def unique_name(base: str, taken: Iterable[str]) -> str:
    """`base`, or `base_2`, `base_3`, ... whichever is not taken."""
    used = set(taken)
    if base not in used:
        return base
    suffix = 2
    while f"{base}_{suffix}" in used:
        suffix += 1
    return f"{base}_{suffix}"

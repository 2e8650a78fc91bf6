"""COUNT_IF(cond) and the `FILTER (WHERE cond)` clause, rewritten into plain aggregates.

`AGG(x) FILTER (WHERE cond)` is `AGG(CASE WHEN cond THEN x END)`; `COUNT(*) FILTER (WHERE
cond)` and `COUNT_IF(cond)` are `COUNT(CASE WHEN cond THEN 1 END)`. This is exact because
every aggregate of the language ignores NULL arguments (COUNT(*) is the one that counts rows,
hence its rewrite to COUNT of a constant), and a CASE without ELSE is NULL where `cond` is
false or NULL, as FILTER drops those rows. The rewrite happens before planning: a filtered
call is then an ordinary `AggregateCall` whose argument holds the condition, so mappers, Spark
and reducers need nothing new, and identical calls share one state however they are written
(`COUNT_IF(c)`, `COUNT(*) FILTER (WHERE c)`, `COUNT(CASE WHEN c THEN 1 END)`).
Its default name says what it is: `count_if_type_dns`, `sum_bytes_if_type_dns`.
"""

from __future__ import annotations

from dataclasses import replace

from sqlglot import exp

from mars.sql.aggregate_calls import default_alias, read_aggregate, sanitized_name
from mars.sql.errors import TaskError
from mars.sql.positions import node_position
from mars.sql.statement import SelectStatement
from mars.tasks.spec import AggFunc


def without_aggregate_filters(statement: SelectStatement) -> SelectStatement:
    """`statement` with every FILTER clause and COUNT_IF of its SELECT, HAVING and ORDER BY
    rewritten into plain aggregates (new trees; the original positions are kept)."""
    having = statement.having
    return replace(
        statement,
        select=tuple(_rewritten(item) for item in statement.select),
        having=_rewritten(having) if having is not None else None,
        order_by=tuple(_ordered(ordered) for ordered in statement.order_by),
    )


def _ordered(ordered: exp.Ordered) -> exp.Ordered:
    rewritten = _rewritten(ordered)
    assert isinstance(rewritten, exp.Ordered)
    return rewritten


def _rewritten(node: exp.Expr) -> exp.Expr:
    tree = node.copy()
    # COUNT_IF first: `COUNT_IF(a) FILTER (WHERE b)` is then a filtered COUNT.
    for count_if in list(tree.find_all(exp.CountIf)):
        extra = [v for k, v in count_if.args.items() if k != "this" and v]
        if extra or isinstance(count_if.this, exp.Distinct):
            raise TaskError(
                "COUNT_IF takes exactly one condition", position=node_position(count_if)
            )
        condition = _condition(count_if.this, count_if, what="COUNT_IF")
        count = exp.Count(this=_when(condition, exp.Literal.number(1)))
        count.meta.update(count_if.meta)
        tree = _swapped(count_if, count, root=tree)
    for filtered in list(tree.find_all(exp.Filter)):
        aggregate = filtered.this
        if not isinstance(aggregate, exp.AggFunc):
            raise TaskError(
                "FILTER (WHERE ...) applies only to an aggregate function",
                position=node_position(filtered),
            )
        where = filtered.expression
        condition = _condition(
            where.this if isinstance(where, exp.Where) else where, filtered, what="FILTER"
        )
        argument = read_aggregate(aggregate).argument
        if argument is None:  # COUNT(*) or COUNT(1): count the rows where `condition` holds
            aggregate.set("this", _when(condition, exp.Literal.number(1)))
        elif (inner := _guard(argument)) is not None:  # COUNT_IF(a) FILTER (WHERE b), ...
            argument.replace(_when(exp.and_(condition, inner[0], copy=True), inner[1].copy()))
        else:
            argument.replace(_when(condition, argument.copy()))
        tree = _swapped(filtered, aggregate.pop(), root=tree)
    return tree


def _swapped(old: exp.Expr, new: exp.Expr, *, root: exp.Expr) -> exp.Expr:
    """`root` with `old` (in it, or `root` itself) replaced by `new`."""
    if old is root:
        return new
    old.replace(new)
    return root


def _condition(condition: exp.Expr | None, call: exp.Expr, *, what: str) -> exp.Expr:
    """The condition of a COUNT_IF or FILTER: an expression over input fields."""
    if condition is None:
        raise TaskError(f"{what} needs a condition", position=node_position(call))
    inner = condition.find(exp.AggFunc)
    if inner is not None:
        raise TaskError(
            f"aggregate functions are not allowed in {what}'s condition",
            position=node_position(inner),
        )
    return condition


def _when(condition: exp.Expr, value: exp.Expr) -> exp.Case:
    return exp.Case(ifs=[exp.If(this=condition.copy(), true=value)])


def _guard(argument: exp.Expr | None) -> tuple[exp.Expr, exp.Expr] | None:
    """(cond, x) of an argument `CASE WHEN cond THEN x END`, else None."""
    if not isinstance(argument, exp.Case) or argument.args.get("default"):
        return None
    ifs = argument.args.get("ifs") or []
    if len(ifs) != 1 or ifs[0].args.get("true") is None:
        return None
    return ifs[0].this, ifs[0].args["true"]


def call_alias(func: AggFunc, argument: exp.Expr | None, parameters: tuple[float, ...]) -> str:
    """The default name of an aggregate call: `default_alias`, except for an argument
    `CASE WHEN cond THEN x END` (a FILTER or COUNT_IF): `sum_x_if_cond`, `count_if_cond`."""
    guard = _guard(argument)
    if guard is not None:
        condition, value = guard
        suffix = f"_if_{sanitized_name(condition.sql())}"
        if func is AggFunc.COUNT and _is_constant(value):
            return f"count{suffix}"
        return default_alias(func, value.sql(), parameters) + suffix
    return default_alias(func, argument.sql() if argument is not None else None, parameters)


def _is_constant(node: exp.Expr | None) -> bool:
    return isinstance(node, exp.Literal) and not node.is_string

"""The sketch aggregates in SQL: APPROX_PERCENTILE / APPROX_MEDIAN and TOPK.

sqlglot knows DuckDB's spellings, APPROX_QUANTILE(col, p) and APPROX_TOP_K(col, k), as
aggregate nodes; the other names reach us as anonymous functions. `normalize_sketch_calls`
rewrites those into the two nodes (keeping their positions), so the rest of the front end sees
one node per aggregate:

    APPROX_PERCENTILE(col, p), PERCENTILE_APPROX(col, p), APPROX_QUANTILE(col, p)
        p a constant in [0, 1], or a list of them: [0.5, 0.99] or ARRAY[0.5, 0.99]
    APPROX_MEDIAN(col)            = APPROX_PERCENTILE(col, 0.5)
    TOPK(col, k), APPROX_TOP_K(col, k)

Exact percentiles (MEDIAN, QUANTILE_CONT, PERCENTILE_CONT(p) WITHIN GROUP (ORDER BY col), ...)
are rejected with a pointer to APPROX_PERCENTILE: they need every value of a group kept until
its window closes, where a sketch keeps a few hundred.
"""

from __future__ import annotations

from sqlglot import exp

from mars.sql.errors import TaskError
from mars.sql.positions import node_position
from mars.tasks.spec import AggFunc

_PERCENTILE_NAMES = frozenset({"approx_percentile", "percentile_approx"})
_TOPK_NAMES = frozenset({"topk"})
_MEDIAN_NAMES = frozenset({"approx_median"})
_EXACT_NAMES = frozenset(
    {"quantile_cont", "quantile_disc", "percentile", "percentile_cont", "percentile_disc"}
)
_EXACT_NODES = (exp.Median, exp.Quantile, exp.PercentileCont, exp.PercentileDisc)

EXACT_PERCENTILE_MESSAGE = (
    "exact percentiles are not supported: they need every value of a group kept until its "
    "window closes; use APPROX_PERCENTILE(col, p) (or APPROX_MEDIAN(col)), a KLL sketch that "
    "is exact up to 200 values per group and within 1.33 % in rank beyond"
)


def normalize_sketch_calls(root: exp.Expr) -> None:
    """Rewrite the anonymous spellings of the sketch aggregates under `root` in place;
    TaskError for an exact percentile."""
    for node in list(root.walk()):
        if isinstance(node, exp.ApproxQuantile):
            _fractions_as_tuple(node)
            continue
        if isinstance(node, _EXACT_NODES) or (
            isinstance(node, exp.Anonymous) and node.name.lower() in _EXACT_NAMES
        ):
            raise TaskError(EXACT_PERCENTILE_MESSAGE, position=node_position(node))
        if not isinstance(node, exp.Anonymous):
            continue
        name = node.name.lower()
        arguments = list(node.expressions)
        replacement: exp.Expr | None = None
        if name in _PERCENTILE_NAMES or name in _MEDIAN_NAMES:
            if name in _MEDIAN_NAMES:
                arguments.append(exp.Literal.number(0.5))
            replacement = _call(exp.ApproxQuantile, "quantile", arguments, node)
        elif name in _TOPK_NAMES:
            replacement = _call(exp.ApproxTopK, "expression", arguments, node)
        if replacement is not None:
            replacement.meta.update(node.meta)  # the error positions of the call as written
            node.replace(replacement)
            if isinstance(replacement, exp.ApproxQuantile):
                _fractions_as_tuple(replacement)


def _fractions_as_tuple(node: exp.ApproxQuantile) -> None:
    """A list of fractions, `[0.5, 0.9]` or `ARRAY[0.5, 0.9]`, held as a tuple of constants:
    the rest of the front end rejects array values (a task's expressions have none)."""
    fractions = node.args.get("quantile")
    if isinstance(fractions, exp.Array):
        fractions.replace(exp.Tuple(expressions=list(fractions.expressions)))


def _call(
    kind: type[exp.Func], parameter: str, arguments: list[exp.Expr], node: exp.Anonymous
) -> exp.Expr:
    if len(arguments) != 2:
        raise TaskError(_arity_message(node.name.upper()), position=node_position(node))
    return kind(this=arguments[0], **{parameter: arguments[1]})


def _arity_message(name: str) -> str:
    if name in {"TOPK", "APPROX_TOP_K"}:
        return f"{name} takes a column and k, the number of values: {name}(col, 10)"
    if name == "APPROX_MEDIAN":
        return "APPROX_MEDIAN takes one argument"
    return f"{name} takes a column and a fraction (or a list of them): {name}(col, 0.99)"


def read_sketch_call(node: exp.AggFunc) -> tuple[AggFunc, exp.Expr, tuple[float, ...]] | None:
    """(function, argument, parameters) of a sketch aggregate, None for any other node."""
    if isinstance(node, exp.ApproxQuantile):
        _only(node, "this", "quantile", name="APPROX_PERCENTILE")
        fraction = node.args["quantile"]
        if isinstance(fraction, exp.Tuple):
            fractions = tuple(_constant(p, what="a fraction") for p in fraction.expressions)
            return AggFunc.APPROX_PERCENTILES, node.this, fractions
        return AggFunc.APPROX_PERCENTILE, node.this, (_constant(fraction, what="a fraction"),)
    if isinstance(node, exp.ApproxTopK):
        _only(node, "this", "expression", name="TOPK")
        return AggFunc.TOPK, node.this, (_constant(node.expression, what="k"),)
    return None


def _only(node: exp.AggFunc, *names: str, name: str) -> None:
    present = {key for key, value in node.args.items() if value is not None}
    if not set(names) <= present or present - set(names):
        raise TaskError(_arity_message(name), position=node_position(node))
    if isinstance(node.this, exp.Distinct):
        raise TaskError(
            "DISTINCT is only supported as COUNT(DISTINCT ...)", position=node_position(node)
        )


def _constant(node: exp.Expr, *, what: str) -> float:
    """The number a constant argument spells (`0.99`, `-1`, `(5)`); TaskError otherwise."""
    inner, sign = node, 1.0
    while isinstance(inner, exp.Paren | exp.Neg):
        if isinstance(inner, exp.Neg):
            sign = -sign
        inner = inner.this
    if isinstance(inner, exp.Literal) and not inner.is_string:
        try:
            return sign * float(inner.this)
        except ValueError:
            pass
    raise TaskError(
        f"{what} must be a constant number, got {node.sql()}", position=node_position(node)
    )


def reject_list_ordering(target: exp.Expr) -> None:
    """TaskError when a top-k's ORDER BY is an aggregate whose value is a list."""
    inner = target.unnest()
    sketch = read_sketch_call(inner) if isinstance(inner, exp.AggFunc) else None
    if sketch is not None and sketch[0] in (AggFunc.APPROX_PERCENTILES, AggFunc.TOPK):
        raise TaskError(
            "ORDER BY needs one value per group, and this aggregate gives a list; order by "
            "APPROX_PERCENTILE(col, p) with one fraction, or another aggregate",
            position=node_position(target),
        )


LIST_FUNCS = frozenset({AggFunc.APPROX_PERCENTILES, AggFunc.TOPK})


def reject_list_operations(
    result: exp.Expr, list_columns: set[str], *, bare_allowed: bool, position: int | None
) -> None:
    """TaskError when a result expression (aggregates already replaced by their columns)
    computes with a list-valued aggregate: a list may be selected as it is (`bare_allowed`,
    SELECT) or tested with IS NULL or IS NOT NULL, nothing else (no function or operator
    of the language takes one)."""
    for column in result.find_all(exp.Column):
        if column.name not in list_columns:
            continue
        parent = column.parent
        while isinstance(parent, exp.Paren):
            parent = parent.parent
        if isinstance(parent, exp.Is) or (bare_allowed and column.unnest() is result.unnest()):
            continue
        raise TaskError(
            f"this aggregate ('{column.name}') gives a list (TOPK, or APPROX_PERCENTILE with "
            "a list of fractions): it can be selected as it is or tested with IS NULL, not "
            "used in an expression or a condition",
            position=position,
        )

"""Compiles a sqlglot expression tree (the task language's expression subset) to Polars.

Null semantics follow SQL: comparisons and arithmetic with NULL give NULL, AND/OR/NOT use
three-valued (Kleene) logic, which is Polars' own. A WHERE that evaluates to NULL must drop
the row, so callers filter with `expr.fill_null(False)`.

Deliberate choices where SQL dialects differ (the same as Spark's defaults, the other engine
that runs these expressions): `/` is true division, `x / 0` and `x % 0` are NULL, `%` keeps
the sign of the dividend, CAST never fails (an unconvertible value becomes NULL), LIKE uses
backslash as its default escape character.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import polars as pl
from sqlglot import exp

from mars.sql.errors import TaskError
from mars.sql.like import like_to_regex
from mars.sql.polars_functions import FUNCTION_COMPILERS, as_number
from mars.sql.positions import node_position

Compile = Callable[[exp.Expr], pl.Expr]


def compile_node(node: exp.Expr) -> pl.Expr:
    """The Polars expression of `node`; TaskError (at the node) for anything unsupported."""
    node_type = type(node)
    handler = _NODE_COMPILERS.get(node_type)
    if handler is not None:
        return handler(node)
    function = FUNCTION_COMPILERS.get(node_type)
    if function is not None:
        return function(node, compile_node)
    raise _unsupported(node)


def check_functions(node: exp.Expr) -> None:
    """Reject the leftmost unknown or unsupported function in `node` (aggregates are fine).

    Run before anything else looks at an expression, so `cnt(x)` is reported as an unknown
    function rather than as a problem with `x`.
    """
    culprits = [
        n
        for n in node.walk()
        if isinstance(n, exp.Func)
        and not isinstance(n, exp.AggFunc)
        and type(n) not in _NODE_COMPILERS
        and type(n) not in FUNCTION_COMPILERS
    ]
    if culprits:
        first = min(culprits, key=lambda n: node_position(n) or 0)
        raise _unsupported(first)


def _unsupported(node: exp.Expr) -> TaskError:
    where = node_position(node)
    if isinstance(node, exp.AggFunc):
        return TaskError(
            f"aggregate function {node.sql_name()} is not allowed here", position=where
        )
    if isinstance(node, exp.Anonymous):
        return TaskError(f"unknown function '{node.name}'", position=where)
    if isinstance(node, exp.Func):
        return TaskError(f"unsupported function '{node.sql_name().lower()}'", position=where)
    if isinstance(node, exp.Subquery | exp.Select | exp.Exists | exp.Query):
        return TaskError("subqueries are not supported", position=where)
    if isinstance(node, exp.Star):
        return TaskError("'*' is only allowed in COUNT(*)", position=where)
    return TaskError(f"unsupported expression: {node.sql()}", position=where)


def _column(node: exp.Expr) -> pl.Expr:
    assert isinstance(node, exp.Column)
    if node.table:
        raise TaskError(
            f"qualified column '{node.sql()}' is not supported here", position=node_position(node)
        )
    return pl.col(node.name)


def _literal(node: exp.Expr) -> pl.Expr:
    assert isinstance(node, exp.Literal)
    if node.is_string:
        return pl.lit(node.this, dtype=pl.String)
    text = node.this
    try:
        return pl.lit(int(text))
    except ValueError:
        pass
    try:
        return pl.lit(float(text))
    except ValueError:  # sqlglot reads e.g. `0E` as a number
        raise TaskError(f"'{text}' is not a number", position=node_position(node)) from None


def _binary(op: Callable[[pl.Expr, pl.Expr], pl.Expr]) -> Callable[[exp.Expr], pl.Expr]:
    def compile_binary(node: exp.Expr) -> pl.Expr:
        return op(compile_node(node.this), compile_node(node.expression))

    return compile_binary


def _divide(left: pl.Expr, right: pl.Expr) -> pl.Expr:
    return pl.when(right == 0).then(None).otherwise(left / right)


def _modulo(left: pl.Expr, right: pl.Expr) -> pl.Expr:
    # SQL's remainder has the sign of the dividend; Polars' `%` is floored like Python's.
    left, right = as_number(left), as_number(right)
    remainder = (left.abs() % right.abs()) * left.sign()
    return pl.when(right == 0).then(None).otherwise(remainder)


def _is(node: exp.Expr) -> pl.Expr:
    value = compile_node(node.this)
    target = node.expression
    if isinstance(target, exp.Null):
        return value.is_null()
    if isinstance(target, exp.Boolean):
        return (value == pl.lit(target.this)).fill_null(False)
    raise _unsupported(node)


def _in(node: exp.Expr) -> pl.Expr:
    if node.args.get("query") is not None or node.args.get("unnest") is not None:
        raise TaskError("subqueries are not supported", position=node_position(node))
    value = compile_node(node.this)
    items = node.expressions
    literal_kinds = {i.is_string for i in items if isinstance(i, exp.Literal)}
    if items and all(isinstance(i, exp.Literal) for i in items) and len(literal_kinds) == 1:
        # Fast path; is_in gives NULL for a NULL value, as SQL's IN does.
        return value.is_in([_python_literal(i) for i in items if isinstance(i, exp.Literal)])
    # General case: SQL defines `x IN (a, b)` as `x = a OR x = b` (NULLs included).
    result: pl.Expr | None = None
    for item in items:
        equal = value == compile_node(item)
        result = equal if result is None else result | equal
    if result is None:
        raise _unsupported(node)
    return result


def _python_literal(node: exp.Literal) -> object:
    if node.is_string:
        return node.this
    try:
        return int(node.this)
    except ValueError:
        return float(node.this)


def _like(node: exp.Expr, *, escape: str | None = "\\") -> pl.Expr:
    pattern = node.expression
    if not isinstance(pattern, exp.Literal) or not pattern.is_string:
        raise TaskError("LIKE needs a string literal pattern", position=node_position(node))
    try:
        regex = like_to_regex(
            pattern.this, escape=escape, case_insensitive=isinstance(node, exp.ILike)
        )
    except ValueError as err:
        raise TaskError(str(err), position=node_position(pattern)) from None
    matched = compile_node(node.this).cast(pl.String).str.contains(regex)
    return ~matched if node.args.get("negate") else matched


def _escape(node: exp.Expr) -> pl.Expr:
    escape = node.expression
    if (
        not isinstance(node.this, exp.Like | exp.ILike)
        or not isinstance(escape, exp.Literal)
        or len(escape.this) != 1
    ):
        raise TaskError("ESCAPE needs one character after LIKE", position=node_position(node))
    return _like(node.this, escape=escape.this)


def _between(node: exp.Expr) -> pl.Expr:
    value = compile_node(node.this)
    return (value >= compile_node(node.args["low"])) & (value <= compile_node(node.args["high"]))


def _case(node: exp.Expr) -> pl.Expr:
    operand = node.this
    chain: Any = None  # polars' When/Then builder types
    for branch in node.args.get("ifs") or []:
        condition = compile_node(branch.this)
        if operand is not None:
            condition = compile_node(operand) == condition
        value = compile_node(branch.args["true"])
        chain = (
            pl.when(condition).then(value) if chain is None else chain.when(condition).then(value)
        )
    if chain is None:
        raise _unsupported(node)
    default = node.args.get("default")
    result: pl.Expr = chain.otherwise(
        compile_node(default) if default is not None else pl.lit(None)
    )
    return result


def _if(node: exp.Expr) -> pl.Expr:
    otherwise = node.args.get("false")
    return (
        pl.when(compile_node(node.this))
        .then(compile_node(node.args["true"]))
        .otherwise(compile_node(otherwise) if otherwise is not None else pl.lit(None))
    )


_CAST_TYPES: dict[str, pl.DataType] = {
    **dict.fromkeys(("INT", "BIGINT", "SMALLINT", "TINYINT", "MEDIUMINT", "UBIGINT"), pl.Int64()),
    **dict.fromkeys(("FLOAT", "DOUBLE", "DECIMAL", "REAL"), pl.Float64()),
    **dict.fromkeys(("TEXT", "VARCHAR", "CHAR", "NVARCHAR", "NCHAR", "STRING"), pl.String()),
    "BOOLEAN": pl.Boolean(),
}


def _cast(node: exp.Expr) -> pl.Expr:
    target = node.args["to"]
    type_name = str(getattr(target.this, "value", target.this)).upper()
    dtype = _CAST_TYPES.get(type_name)
    if dtype is None:
        raise TaskError(
            f"CAST to {target.sql()} is not supported; use int, float, string or boolean",
            position=node_position(node),
        )
    return compile_node(node.this).cast(dtype, strict=False)


def _not(node: exp.Expr) -> pl.Expr:
    return ~compile_node(node.this)


_NODE_COMPILERS: dict[type[exp.Expr], Callable[[exp.Expr], pl.Expr]] = {
    exp.Column: _column,
    exp.Literal: _literal,
    exp.Boolean: lambda node: pl.lit(bool(node.this)),
    exp.Null: lambda node: pl.lit(None),
    exp.Paren: lambda node: compile_node(node.this),
    exp.Neg: lambda node: -as_number(compile_node(node.this)),
    exp.Add: _binary(lambda a, b: a + b),
    exp.Sub: _binary(lambda a, b: a - b),
    exp.Mul: _binary(lambda a, b: a * b),
    exp.Div: _binary(_divide),
    exp.Mod: _binary(_modulo),
    exp.EQ: _binary(lambda a, b: a == b),
    exp.NEQ: _binary(lambda a, b: a != b),
    exp.GT: _binary(lambda a, b: a > b),
    exp.GTE: _binary(lambda a, b: a >= b),
    exp.LT: _binary(lambda a, b: a < b),
    exp.LTE: _binary(lambda a, b: a <= b),
    exp.NullSafeEQ: _binary(lambda a, b: a.eq_missing(b)),
    exp.NullSafeNEQ: _binary(lambda a, b: a.ne_missing(b)),
    exp.And: _binary(lambda a, b: a & b),
    exp.Or: _binary(lambda a, b: a | b),
    exp.Not: _not,
    exp.Is: _is,
    exp.In: _in,
    exp.Like: _like,
    exp.ILike: _like,
    exp.Escape: _escape,
    exp.Between: _between,
    exp.Case: _case,
    exp.If: _if,
    exp.Cast: _cast,
    exp.TryCast: _cast,
}

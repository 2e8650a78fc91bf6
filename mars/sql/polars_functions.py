"""Scalar SQL functions of the task language, compiled to Polars.

upper, lower, length, abs, round, coalesce, substr/substring, concat and `||`. String
functions cast their input to text first, so `length(42)` is 2 rather than a type error.
Each compiler gets the node and the compiler for its arguments.
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl
from sqlglot import exp

from mars.sql.errors import TaskError
from mars.sql.positions import node_position

Compile = Callable[[exp.Expr], pl.Expr]
FunctionCompiler = Callable[[exp.Expr, Compile], pl.Expr]

MAX_ROUND_DECIMALS = 15  # beyond a float64's precision anyway


def _text(node: exp.Expr, compile_node: Compile) -> pl.Expr:
    return compile_node(node).cast(pl.String)


def _upper(node: exp.Expr, compile_node: Compile) -> pl.Expr:
    return _text(node.this, compile_node).str.to_uppercase()


def _lower(node: exp.Expr, compile_node: Compile) -> pl.Expr:
    return _text(node.this, compile_node).str.to_lowercase()


def _length(node: exp.Expr, compile_node: Compile) -> pl.Expr:
    return _text(node.this, compile_node).str.len_chars().cast(pl.Int64)


def as_number(value: pl.Expr) -> pl.Expr:
    """An operand of an operation defined on numbers only (abs, negation, remainder). `+ 0`
    leaves a number as it is and turns a batch column of only NULLs (Polars' Null type, on
    which those operations fail) into a numeric NULL: the result must not depend on whether a
    batch happened to hold a value of the field."""
    return value + 0


def _abs(node: exp.Expr, compile_node: Compile) -> pl.Expr:
    return as_number(compile_node(node.this)).abs()


def _round(node: exp.Expr, compile_node: Compile) -> pl.Expr:
    decimals_node = node.args.get("decimals")
    decimals = 0
    if decimals_node is not None:
        literal = isinstance(decimals_node, exp.Literal) and decimals_node.this.isdigit()
        if not literal or int(decimals_node.this) > MAX_ROUND_DECIMALS:
            raise TaskError(
                f"ROUND's second argument must be an integer from 0 to {MAX_ROUND_DECIMALS}",
                position=node_position(decimals_node),
            )
        decimals = int(decimals_node.this)
    # SQL rounds halves away from zero (ROUND(2.5) = 3); Polars' default is to even.
    return compile_node(node.this).cast(pl.Float64).round(decimals, mode="half_away_from_zero")


def _coalesce(node: exp.Expr, compile_node: Compile) -> pl.Expr:
    arguments = [node.this, *node.expressions]
    return pl.coalesce([compile_node(a) for a in arguments])


def _substring(node: exp.Expr, compile_node: Compile) -> pl.Expr:
    text = _text(node.this, compile_node)
    start_node = node.args.get("start")
    length_node = node.args.get("length")
    start = compile_node(start_node) if start_node is not None else pl.lit(1)
    # SQL positions are 1-based, a negative one counts from the end, 0 acts like 1 (Spark).
    offset = pl.when(start > 0).then(start - 1).when(start < 0).then(start).otherwise(0)
    length = compile_node(length_node) if length_node is not None else None
    return text.str.slice(offset, length)


def _concat(node: exp.Expr, compile_node: Compile) -> pl.Expr:
    parts = [_text(p, compile_node) for p in node.expressions]
    # CONCAT is NULL if any part is (Spark, ANSI `||`), unless the dialect said otherwise.
    return pl.concat_str(parts, ignore_nulls=bool(node.args.get("coalesce")))


def _pipe_concat(node: exp.Expr, compile_node: Compile) -> pl.Expr:
    return pl.concat_str([_text(node.this, compile_node), _text(node.expression, compile_node)])


FUNCTION_COMPILERS: dict[type[exp.Expr], FunctionCompiler] = {
    exp.Upper: _upper,
    exp.Lower: _lower,
    exp.Length: _length,
    exp.Abs: _abs,
    exp.Round: _round,
    exp.Coalesce: _coalesce,
    exp.Substring: _substring,
    exp.Concat: _concat,
    exp.DPipe: _pipe_concat,
}

"""The task language's SQL expressions: parse, compile to Polars, transpile to Spark SQL.

Expressions inside a `TaskSpec` are SQL text in sqlglot's canonical form (default dialect).
`to_polars` compiles such text for the mapper and the reducer; `to_spark_sql` gives the same
expression in Spark's dialect for the PySpark job. See `polars_compiler` for null semantics:
in particular a WHERE that evaluates to NULL drops the row, so filter with
`to_polars(where).fill_null(False)`.
"""

from __future__ import annotations

from functools import lru_cache

import polars as pl
import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from mars.sql.errors import TaskError
from mars.sql.polars_compiler import compile_node
from mars.sql.positions import parse_error_position, token_error_position


def parse_expression(sql: str) -> exp.Expr:
    """Parse one SQL expression (not a statement); TaskError with the position if it is bad."""
    try:
        node: exp.Expr | None = sqlglot.parse_one(sql, into=exp.Condition) if sql.strip() else None
    except ParseError as err:
        raise TaskError(
            syntax_error_message(err), position=parse_error_position(sql, err), sql=sql
        ) from None
    except TokenError as err:
        raise TaskError(
            "cannot read the expression (unterminated string or quoted name?)",
            position=token_error_position(err, sql),
            sql=sql,
        ) from None
    if node is None:
        raise TaskError("empty expression", position=0, sql=sql)
    return node


def syntax_error_message(err: ParseError) -> str:
    """A short message from sqlglot's first error: what it stumbled on."""
    if not err.errors:
        return f"syntax error: {err}"
    first = err.errors[0]
    highlight = (first.get("highlight") or "").strip()
    description = str(first.get("description") or "")
    near = f" near '{highlight}'" if highlight else " at the end"
    if description.startswith("Expecting"):
        return f"syntax error{near}: {description[0].lower()}{description[1:]}"
    return f"syntax error{near}"


@lru_cache(maxsize=4096)
def to_polars(sql: str) -> pl.Expr:
    """Compile an SQL expression (as stored in a TaskSpec) to a Polars expression.

    Column references become `pl.col(name)`. Raises TaskError for unknown functions,
    aggregates, subqueries or anything outside the task language. Cached: the reducer
    finalizes every closed window with the task's same few expressions (Polars expressions
    are immutable, so one can be shared).
    """
    node = parse_expression(sql)
    try:
        return compile_node(node)
    except TaskError as err:
        raise err.locate(sql) from None


def to_spark_sql(sql: str) -> str:
    """The same expression in Spark SQL (for the PySpark pre-aggregation job)."""
    node = parse_expression(sql)
    return node.sql(dialect="spark")

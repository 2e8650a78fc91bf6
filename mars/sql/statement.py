"""Reads the SQL part of a task with sqlglot and checks it has the one supported shape.

    SELECT <items> FROM <topic> [WHERE ...] [GROUP BY ...] [HAVING ...] [ORDER BY <e> LIMIT <k>]

Everything else (joins, subqueries, CTEs, UNION, DISTINCT, SELECT *, OFFSET, window functions)
is rejected here with a clear message and the position of the offending part.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import Tokenizer, TokenType

from mars.sql.errors import TaskError
from mars.sql.expressions import syntax_error_message
from mars.sql.field_references import rewrite_field_references
from mars.sql.positions import node_position, parse_error_position, token_error_position
from mars.sql.sketch_calls import normalize_sketch_calls

_SUPPORTED_PARTS = {"expressions", "from_", "where", "group", "having", "order", "limit"}
_UNSUPPORTED_PART_NAMES = {
    "joins": "joins are not supported: a task reads one topic",
    "with_": "WITH (common table expressions) is not supported",
    "distinct": "SELECT DISTINCT is not supported; use GROUP BY",
    "offset": "OFFSET is not supported",
    "qualify": "QUALIFY is not supported",
    "laterals": "LATERAL is not supported",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class SelectStatement:
    """The parts of a task's SELECT, as sqlglot trees whose positions are in the original SQL."""

    source_topic: str
    select: tuple[exp.Expr, ...]
    where: exp.Expr | None
    group_by: tuple[exp.Expr, ...]
    having: exp.Expr | None
    order_by: tuple[exp.Ordered, ...]
    limit: exp.Expr | None


def read_statement(sql: str) -> SelectStatement:
    """Parse `sql` (Mars clauses already blanked out) into a checked `SelectStatement`."""
    select = _parse_single_select(sql)
    for part, value in select.args.items():
        if value and part not in _SUPPORTED_PARTS:
            message = _UNSUPPORTED_PART_NAMES.get(part, f"{part.upper()} is not supported")
            node = value[0] if isinstance(value, list) else value
            where = node_position(node) if isinstance(node, exp.Expr) else None
            raise TaskError(message, position=where)
    _reject_unsupported_nodes(select, sql)
    normalize_sketch_calls(select)
    source_topic, qualifiers = _read_source(select)
    rewrite_field_references(select, qualifiers)
    group = select.args.get("group")
    order = select.args.get("order")
    limit = select.args.get("limit")
    return SelectStatement(
        source_topic=source_topic,
        select=tuple(select.expressions),
        where=select.args["where"].this if select.args.get("where") else None,
        group_by=tuple(group.expressions) if group else (),
        having=select.args["having"].this if select.args.get("having") else None,
        order_by=tuple(order.expressions) if order else (),
        limit=limit.expression if limit is not None else None,
    )


def _parse_single_select(sql: str) -> exp.Select:
    try:
        statements = [s for s in sqlglot.parse(sql) if s is not None]
    except ParseError as err:
        raise TaskError(
            syntax_error_message(err), position=parse_error_position(sql, err)
        ) from None
    except TokenError as err:
        position = token_error_position(err, sql)
        raise TaskError("cannot read the SQL here", position=position) from None
    if not statements:
        raise TaskError("empty task: expected SELECT ... FROM <topic> ... WINDOWING <n> <unit>")
    if len(statements) > 1:
        raise TaskError(
            "only one statement is allowed",
            position=_select_keyword_before(sql, node_position(statements[1])),
        )
    statement = statements[0]
    if not isinstance(statement, exp.Select):
        kind = "UNION/INTERSECT/EXCEPT" if isinstance(statement, exp.SetOperation) else "it"
        raise TaskError(
            f"a task is one SELECT statement; {kind} is not supported",
            position=_select_keyword_before(sql, node_position(statement)),
        )
    return statement


def _select_keyword_before(sql: str, position: int | None) -> int | None:
    """The SELECT keyword that starts the statement or subquery around `position`.

    sqlglot keeps positions of names and literals but not of keywords; this finds the
    SELECT token itself so the error points at the start of the offending query.
    """
    if position is None:
        return None
    starts = [t.start for t in Tokenizer().tokenize(sql) if t.token_type == TokenType.SELECT]
    before = [start for start in starts if start <= position]
    return max(before) if before else position


def _reject_unsupported_nodes(select: exp.Select, sql: str) -> None:
    for node in select.walk():
        if node is select:
            continue
        if isinstance(node, exp.Subquery | exp.Select | exp.Exists):
            raise TaskError(
                "subqueries are not supported",
                position=_select_keyword_before(sql, node_position(node)),
            )
        if isinstance(node, exp.Window):
            raise TaskError(
                "window functions (OVER) are not supported; use WINDOWING <n> <unit>",
                position=node_position(node),
            )
        if isinstance(node, exp.Star) and not isinstance(node.parent, exp.Count):
            raise TaskError(
                "SELECT * is not supported; list the columns and aggregates",
                position=_star_position(node),
            )
        if isinstance(node, exp.Rollup | exp.Cube | exp.GroupingSets):
            raise TaskError(
                "ROLLUP, CUBE and GROUPING SETS are not supported", position=node_position(node)
            )


def _star_position(node: exp.Star) -> int | None:
    parent = node.parent
    return node_position(parent) if isinstance(parent, exp.Column) else node_position(node)


def _read_source(select: exp.Select) -> tuple[str, set[str]]:
    """The source topic and the names a column may be qualified with (topic, alias)."""
    source = select.args.get("from_")
    if source is None:
        raise TaskError("missing FROM <topic>", position=None)
    table = source.this
    if not isinstance(table, exp.Table) or not isinstance(table.this, exp.Identifier):
        raise TaskError("FROM must name one Kafka topic", position=node_position(source))
    # `FROM a.b` means the topic `a.b`; quote names with other characters: FROM "clicks-v2".
    parts = [p.name for p in table.parts]
    topic = ".".join(parts)
    qualifiers = {topic, parts[-1]}
    if table.alias:
        qualifiers.add(table.alias)
    return topic, qualifiers

"""Field references in a task's SQL: `sip`, `S.sip`, and paths into nested JSON
(`payload.user.id`, `m['a key']`, `m.tags[0]`), each rewritten to one column.

sqlglot reads `a.b.c` as a column `c` of table `b` in database `a`, longer chains as `Dot`s and
`x[...]` as a `Bracket`. Here every such chain rooted at a column becomes a single column named
by `mars.tasks.field_paths.path_name` (`"$.payload.user.id"`), keeping the position of its
first character, so the rest of the task language (planner, Polars, Spark SQL, the decoders'
field lists) sees a path exactly as it sees a top-level field.

A leading name that is the topic (or its alias) qualifies the rest: `S.sip` is `sip`, and with
`FROM S`, `S.m.id` is the path `m.id`. The longest such prefix is taken; any other dotted name
is a path. Indexes are 0-based (`m.tags[0]` is the first element), as in JSON Pointer and the
JSON paths of DuckDB, Flink and Spark.
"""

from __future__ import annotations

from sqlglot import exp

from mars.sql.errors import TaskError
from mars.sql.positions import node_position
from mars.tasks.field_paths import Step, display_path, field_path, last_name, path_name


def rewrite_field_references(select: exp.Select, qualifiers: set[str]) -> None:
    """Replace every column, qualified column and path in `select` by its one column."""
    for node in list(select.find_all(exp.Column, exp.Dot, exp.Bracket)):
        if isinstance(node.parent, exp.Dot | exp.Bracket) and node.arg_key == "this":
            continue  # not the outermost link of its chain: its chain is replaced whole
        if isinstance(node, exp.Dot) and not _rooted_at_column(node):
            continue  # e.g. a function call's Dot form; not a field reference
        steps = _steps(node, qualifiers)
        if isinstance(node, exp.Column) and len(steps) == 1 and path_name(steps) == steps[0]:
            for part in ("table", "db", "catalog"):  # a top-level field: as the user wrote it
                node.set(part, None)
            continue
        column = exp.column(path_name(steps), quoted=True)
        start = node_position(node)
        if start is not None:
            column.this.meta["start"] = start
        node.replace(column)


def column_label(name: str) -> str:
    """A column's name as the user wrote it, for messages (`payload.user.id`, not `$.…`)."""
    return display_path(field_path(name))


def default_name(name: str) -> str:
    """The result name of an unaliased column: a field's own name, a path's last key."""
    return last_name(field_path(name))


def _rooted_at_column(node: exp.Expr) -> bool:
    while isinstance(node, exp.Dot | exp.Bracket):
        node = node.this
    return isinstance(node, exp.Column)


def _steps(node: exp.Expr, qualifiers: set[str]) -> tuple[Step, ...]:
    if isinstance(node, exp.Column):
        return _column_steps(node, qualifiers)
    if isinstance(node, exp.Dot):
        key = node.expression
        if not isinstance(key, exp.Identifier):
            raise TaskError("expected a key name after '.'", position=node_position(key))
        return (*_steps(node.this, qualifiers), key.name)
    if isinstance(node, exp.Bracket):
        base = node.this
        if not _rooted_at_column(base):
            raise TaskError(
                "[...] reads a field's nested value: it applies to a field path only",
                position=node_position(node),
            )
        return (*_steps(base, qualifiers), _bracket_step(node))
    raise TaskError("expected a field name", position=node_position(node))  # pragma: no cover


def _column_steps(column: exp.Column, qualifiers: set[str]) -> tuple[Step, ...]:
    if isinstance(column.this, exp.Star):
        raise TaskError(
            "SELECT * is not supported; list the columns and aggregates",
            position=node_position(column),
        )
    parts = [part.name for part in column.parts]
    for length in range(len(parts) - 1, 0, -1):
        if ".".join(parts[:length]) in qualifiers:
            return tuple(parts[length:])
    return tuple(parts)


def _bracket_step(node: exp.Bracket) -> Step:
    if len(node.expressions) != 1:
        raise TaskError("[...] takes one key or index", position=node_position(node))
    inner = node.expressions[0]
    if isinstance(inner, exp.Literal) and inner.is_string:
        return str(inner.this)
    if isinstance(inner, exp.Literal) and str(inner.this).isdigit():
        return int(inner.this)
    if isinstance(inner, exp.Neg) or (isinstance(inner, exp.Literal) and not inner.is_string):
        raise TaskError(
            "an array index is a whole number from 0 (the first element)",
            position=node_position(inner),
        )
    raise TaskError(
        "[...] takes a string key ('name') or a 0-based index (0, 1, ...), not an expression",
        position=node_position(inner),
    )

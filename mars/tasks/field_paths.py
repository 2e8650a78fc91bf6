"""Paths into nested JSON records (`payload.user.id`, `m['a key']`, `m.tags[0]`) and the one
column name that stands for each.

A path is a top-level field name followed by steps: a key (str) of an object or a 0-based
index (int) of an array, as in JSON Pointer, JSONPath (`$.a[0]`), DuckDB's and Flink's JSON
paths. Everywhere past the SQL, a path is a column named by `path_name`: a top-level field
keeps its own name (`sip`), a longer path is written `$` followed by `.key` (a key that is a
plain identifier), `['key']` (any other key; `\\` and `'` escaped with `\\`) or `[n]`:
`$.payload.user.id`, `$.m['a key']`, `$.m.tags[0]`. `field_path` reads such a name back. The
one name this could confuse, a top-level field whose own name starts with `$.` or `$[`, is
written `$['$.x']`, so every column name means exactly one path.
"""

from __future__ import annotations

import re

Step = str | int  # an object key, or a 0-based array index
FieldPath = tuple[Step, ...]  # a top-level field name (str), then its steps

_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_INDEX = re.compile(r"\[(\d+)\]")
_QUOTED = re.compile(r"\['((?:[^'\\]|\\.)*)'\]")
_DOTTED = re.compile(r"\.([^.\[\]]+)")
_FIRST = re.compile(r"[^.\[\]]+")
_QUOTED_PATH = re.compile(r'"(\$[.\[](?:[^"]|"")*)"')


class FieldPathError(ValueError):
    """A path text that cannot be read (the message says where)."""


def is_path_name(name: str) -> bool:
    """True if the column name `name` is a path's (`$.` or `$[` first), not a field's own."""
    return name.startswith(("$.", "$["))


def path_name(path: FieldPath) -> str:
    """The column name of `path` (see the module docstring)."""
    if not path or not isinstance(path[0], str):
        raise FieldPathError("a path starts with a field name")
    if len(path) == 1 and not is_path_name(path[0]):
        return path[0]
    return "$" + "".join(_step_text(step) for step in path)


def field_path(name: str) -> FieldPath:
    """The path a column name stands for: `(name,)` for a top-level field."""
    if not is_path_name(name):
        return (name,)
    path = _read_steps(name, 1)
    if not isinstance(path[0], str):
        raise FieldPathError(f"the path '{name}' starts with an index, not a field name")
    return path


def read_path_text(text: str) -> FieldPath:
    """A path as a user writes it outside the SQL (the `event_time` option): `meta.ts`,
    `meta['a key']`, `meta.ts[0]`, or a column name (`$['a.b']`: the field named `a.b`)."""
    if is_path_name(text):
        return field_path(text)
    first = _FIRST.match(text)
    if first is None:
        raise FieldPathError(f"'{text}' does not start with a field name")
    return (first.group(0), *_read_steps(text, first.end()))


def display_path(path: FieldPath) -> str:
    """`path` as written in SQL, for messages: `payload.user.id`, `m['a key']`, `m.tags[0]`."""
    head = path[0]
    assert isinstance(head, str)
    return head + "".join(_step_text(step) for step in path[1:])


def display_sql(sql: str) -> str:
    """SQL text of a task (its path columns quoted, `"$.m.u.id"`) with each path as written in
    SQL (`m.u.id`), for messages."""
    return _QUOTED_PATH.sub(lambda m: display_path(field_path(m.group(1).replace('""', '"'))), sql)


def last_name(path: FieldPath) -> str:
    """The default result name of `path`: its last key, then `_<n>` per index after it
    (`payload.user.id` -> `id`, `m.tags[0]` -> `tags_0`)."""
    indexes: list[str] = []
    for step in reversed(path):
        if isinstance(step, str):
            return "_".join([step, *reversed(indexes)])
        indexes.append(str(step))
    raise FieldPathError("a path starts with a field name")  # pragma: no cover


def _step_text(step: Step) -> str:
    if isinstance(step, int):
        return f"[{step}]"
    if _PLAIN_KEY.fullmatch(step):
        return f".{step}"
    escaped = step.replace("\\", "\\\\").replace("'", "\\'")
    return f"['{escaped}']"


def _read_steps(text: str, position: int) -> FieldPath:
    steps: list[Step] = []
    while position < len(text):
        for pattern in (_INDEX, _QUOTED, _DOTTED):
            match = pattern.match(text, position)
            if match is not None:
                break
        else:
            raise FieldPathError(
                f"cannot read the path '{text}' at character {position + 1}: expected "
                "'.name', \"['key']\" or '[index]'"
            )
        value = match.group(1)
        if pattern is _INDEX:
            steps.append(int(value))
        elif pattern is _QUOTED:
            steps.append(re.sub(r"\\(.)", r"\1", value))
        else:
            steps.append(value)
        position = match.end()
    return tuple(steps)

"""Paths into nested JSON fields in the task language: each form, where they may stand, their
result names, and the errors, at their positions."""

from __future__ import annotations

import pytest

from mars.sql import TaskError, parse_task
from mars.tasks.field_paths import FieldPath, display_sql, field_path, path_name, read_path_text
from mars.tasks.spec import AggFunc, AggregateCall, GroupKey


def parse(sql: str) -> object:
    return parse_task(sql, task_id="t")


@pytest.mark.parametrize(
    ("written", "name", "path"),
    [
        ("payload.user.id", "$.payload.user.id", ("payload", "user", "id")),
        ("S.payload.user.id", "$.payload.user.id", ("payload", "user", "id")),
        ("a.b.c.d.e.f", "$.a.b.c.d.e.f", ("a", "b", "c", "d", "e", "f")),
        ("m['a key']", "$.m['a key']", ("m", "a key")),
        ("m['it''s.x']", "$.m['it\\'s.x']", ("m", "it's.x")),
        ("m.tags[0]", "$.m.tags[0]", ("m", "tags", 0)),
        ("m.items[2].id", "$.m.items[2].id", ("m", "items", 2, "id")),
        ('"a.b"', "a.b", ("a.b",)),  # a quoted name is one top-level field
        ('"$.x"', "$['$.x']", ("$.x",)),
    ],
)
def test_each_path_form_is_one_column(written: str, name: str, path: FieldPath) -> None:
    spec = parse_task(
        f"SELECT {written}, count(*) FROM S GROUP BY {written} WINDOWING 1 s", task_id="t"
    )
    expression = spec.group_keys[0].expression
    assert expression.strip('"').replace('""', '"') == name
    assert field_path(name) == path
    assert path_name(path) == name


def test_paths_in_where_keys_arguments_and_having() -> None:
    spec = parse_task(
        "SELECT payload.user.id, m.tags[0] AS tag, sum(m.v), count(*) FROM S "
        "WHERE m.u.x > 1 GROUP BY payload.user.id, m.tags[0] "
        "HAVING sum(m.v) > 2 AND payload.user.id IS NOT NULL WINDOWING 60 s",
        task_id="t",
    )
    assert spec.group_keys == (
        GroupKey(name="id", expression='"$.payload.user.id"'),
        GroupKey(name="tags_0", expression='"$.m.tags[0]"'),  # a column keeps its own name
    )
    assert spec.where == '"$.m.u.x" > 1'
    assert spec.aggregates[0] == AggregateCall(
        func=AggFunc.SUM, argument='"$.m.v"', alias="sum_m_v"
    )
    assert spec.having == "sum_m_v > 2 AND NOT id IS NULL"
    assert [o.name for o in spec.outputs] == ["id", "tag", "sum_m_v", "count_star"]


def test_an_index_only_path_is_named_by_its_last_key_and_index() -> None:
    spec = parse_task("SELECT m.tags[1], count(*) FROM S GROUP BY 1 WINDOWING 1 s", task_id="t")
    assert spec.group_keys[0].name == "tags_1"


def test_the_event_time_may_be_a_path() -> None:
    spec = parse_task(
        "SELECT k, meta.ts, count(*) FROM S GROUP BY k, meta.ts WINDOWING 1 s "
        "WITH (event_time = 'meta.ts', event_time_format = 'epoch_ms')",
        task_id="t",
    )
    assert spec.event_time.field == "$.meta.ts"
    assert [k.name for k in spec.group_keys] == ["k"]  # meta.ts stands for the window
    assert read_path_text("meta['a key'][0]") == ("meta", "a key", 0)
    assert read_path_text("$['a.b']") == ("a.b",)


@pytest.mark.parametrize(
    ("sql", "message", "at"),
    [
        (
            "SELECT a.id, b.id, count(*) FROM S GROUP BY a.id, b.id WINDOWING 1 s",
            "group key name 'id' is used twice",
            "b.id WINDOWING",
        ),
        ("SELECT count(*) FROM S WHERE m[-1] = 1 WINDOWING 1 s", "whole number from 0", "1] ="),
        ("SELECT count(*) FROM S WHERE m[1.5] = 1 WINDOWING 1 s", "whole number from 0", "1.5"),
        ("SELECT count(*) FROM S WHERE m[k] = 1 WINDOWING 1 s", "not an expression", "k] ="),
        (
            "SELECT count(*) FROM S WHERE upper(m)[0] = 'A' WINDOWING 1 s",
            "field path only",
            "upper",
        ),
        (
            "SELECT m.u.id, count(*) FROM S GROUP BY m.v WINDOWING 1 s",
            "column 'm.u.id' must appear in GROUP BY",
            "m.u.id,",
        ),
        (
            "SELECT count(*) FROM S WHERE m.u.id = 1 WINDOWING 1 s "
            "WITH (format = csv, csv_columns = 'm,timestamp')",
            "'m.u.id' is a nested field: nested fields need JSON input",
            "m.u.id =",
        ),
    ],
)
def test_path_errors_point_at_the_path(sql: str, message: str, at: str) -> None:
    with pytest.raises(TaskError) as caught:
        parse(sql)
    assert message in caught.value.message
    assert caught.value.position == sql.index(at)


def test_a_nested_event_time_with_csv_input_is_refused() -> None:
    with pytest.raises(TaskError, match="nested fields need JSON input"):
        parse(
            "SELECT count(*) FROM S WINDOWING 1 s "
            "WITH (event_time = 'm.ts', format = csv, csv_columns = 'm')"
        )


def test_a_bad_event_time_path_is_refused() -> None:
    with pytest.raises(TaskError, match="event_time"):
        parse("SELECT count(*) FROM S WINDOWING 1 s WITH (event_time = 'm[x]')")


def test_messages_show_paths_as_written() -> None:
    spec = parse_task("SELECT sum(m.v + m['a \"q\"'][0]) FROM S WINDOWING 1 s", task_id="t")
    argument = spec.aggregates[0].argument
    assert argument is not None
    assert display_sql(argument) == "m.v + m['a \"q\"'][0]"

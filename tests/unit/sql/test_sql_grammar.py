"""The task language's accepted forms and what each becomes in the TaskSpec."""

from __future__ import annotations

import pytest

from mars.sql import parse_task
from mars.sql.expressions import parse_expression
from mars.tasks.spec import (
    AggFunc,
    AggregateCall,
    GroupKey,
    OutputColumn,
    TaskSpec,
    TopK,
    WindowSpec,
)


def parse(sql: str, **options: object) -> TaskSpec:
    return parse_task(sql, task_id="t", options=options or None)


def outputs(spec: TaskSpec) -> dict[str, str]:
    return {o.name: o.expression for o in spec.outputs}


def aggregates(spec: TaskSpec) -> list[tuple[AggFunc, str | None, str]]:
    return [(a.func, a.argument, a.alias) for a in spec.aggregates]


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        ("a = 1", "a = 1"),
        ("a <> 1 AND b != 'x'", "a <> 1 AND b <> 'x'"),
        ("a > 1 OR NOT b < 2", "a > 1 OR NOT b < 2"),
        ("a >= 1 AND a <= 2", "a >= 1 AND a <= 2"),
        ("type IN ('a', 'b')", "type IN ('a', 'b')"),
        ("type NOT IN ('a')", "NOT type IN ('a')"),
        ("b IS NULL", "b IS NULL"),
        ("b IS NOT NULL", "NOT b IS NULL"),
        ("path LIKE '/api/%'", "path LIKE '/api/%'"),
        ("path NOT LIKE '%.png'", "path NOT LIKE '%.png'"),
        ("bytes * 8 / 1000 + 1 > 2 - 1", "bytes * 8 / 1000 + 1 > 2 - 1"),
        ("bytes % 2 = 0", "bytes % 2 = 0"),
        ("bytes BETWEEN 1 AND 10", "bytes BETWEEN 1 AND 10"),
        ("CASE WHEN a > 1 THEN 1 ELSE 0 END = 1", "CASE WHEN a > 1 THEN 1 ELSE 0 END = 1"),
        ("CAST(a AS int) = 1", "CAST(a AS INT) = 1"),
        ("upper(type) = 'GET' AND length(path) > 3", "UPPER(type) = 'GET' AND LENGTH(path) > 3"),
        ("coalesce(a, 0) + abs(b) > round(c, 1)", "COALESCE(a, 0) + ABS(b) > ROUND(c, 1)"),
        ("substr(path, 1, 4) = '/api' OR concat(a, b) = 'x'", None),
        ("S.a = 1", "a = 1"),
    ],
)
def test_where_is_stored_as_canonical_sql_that_reparses(where: str, expected: str | None) -> None:
    spec = parse(f"SELECT count(*) FROM S WHERE {where} WINDOWING 10 s")
    assert spec.where is not None
    if expected is not None:
        assert spec.where == expected
    assert parse_expression(spec.where).sql() == spec.where


def test_alias_and_expressions_in_select_list() -> None:
    spec = parse(
        "SELECT upper(type) AS t, count(*) AS c, sum(bytes) / count(*) AS avg_bytes "
        "FROM S GROUP BY upper(type) WINDOWING 60 s"
    )
    assert spec.group_keys == (GroupKey(name="t", expression="UPPER(type)"),)
    assert aggregates(spec) == [
        (AggFunc.COUNT, None, "c"),
        (AggFunc.SUM, "bytes", "sum_bytes"),
    ]
    assert outputs(spec) == {"t": "t", "c": "c", "avg_bytes": "sum_bytes / c"}


def test_group_by_select_alias_and_position() -> None:
    by_alias = parse("SELECT upper(type) AS t, count(*) FROM S GROUP BY t WINDOWING 60 s")
    by_position = parse("SELECT upper(type) AS t, count(*) FROM S GROUP BY 1 WINDOWING 60 s")
    assert (
        by_alias.group_keys
        == by_position.group_keys
        == (GroupKey(name="t", expression="UPPER(type)"),)
    )


def test_unaliased_expression_key_gets_a_generated_name() -> None:
    spec = parse("SELECT upper(type), count(*) FROM S GROUP BY upper(type) WINDOWING 60 s")
    assert spec.group_keys == (GroupKey(name="upper_type", expression="UPPER(type)"),)
    assert outputs(spec) == {"upper_type": "upper_type", "count_star": "count_star"}


def test_expression_over_group_keys_in_select() -> None:
    spec = parse(
        "SELECT lower(upper(type)) AS l, count(*) FROM S GROUP BY upper(type) WINDOWING 1 s"
    )
    assert outputs(spec)["l"] == "LOWER(upper_type)"


def test_identical_aggregate_calls_are_shared() -> None:
    spec = parse(
        "SELECT count(*) AS a, COUNT(*) AS b, count(1), sum(x), SUM(x) + 1 AS s1 "
        "FROM S WINDOWING 1 s"
    )
    assert aggregates(spec) == [(AggFunc.COUNT, None, "a"), (AggFunc.SUM, "x", "sum_x")]
    assert outputs(spec) == {
        "a": "a",
        "b": "a",
        "count_star": "a",
        "sum_x": "sum_x",
        "s1": "sum_x + 1",
    }


def test_all_aggregate_functions() -> None:
    spec = parse(
        "SELECT count(*), count(x), sum(x), min(x), max(x), avg(x), count(DISTINCT u), "
        "approx_count_distinct(u), sum(x * 2) FROM S WINDOWING 1 s"
    )
    assert aggregates(spec) == [
        (AggFunc.COUNT, None, "count_star"),
        (AggFunc.COUNT, "x", "count_x"),
        (AggFunc.SUM, "x", "sum_x"),
        (AggFunc.MIN, "x", "min_x"),
        (AggFunc.MAX, "x", "max_x"),
        (AggFunc.AVG, "x", "avg_x"),
        (AggFunc.COUNT_DISTINCT, "u", "count_distinct_u"),
        (AggFunc.APPROX_COUNT_DISTINCT, "u", "approx_count_distinct_u"),
        (AggFunc.SUM, "x * 2", "sum_x_2"),
    ]


def test_generated_alias_avoids_user_alias() -> None:
    spec = parse("SELECT sum(x), count(*) AS sum_x FROM S WINDOWING 1 s")
    assert aggregates(spec) == [(AggFunc.SUM, "x", "sum_x_2"), (AggFunc.COUNT, None, "sum_x")]


def test_window_columns() -> None:
    spec = parse(
        "SELECT window_start, window_end, timestamp AS ts, count(*) FROM S "
        "GROUP BY window_start WINDOWING 1 s"
    )
    assert spec.group_keys == ()
    assert outputs(spec) == {
        "window_start": "window_start",
        "window_end": "window_end",
        "ts": "window_start",
        "count_star": "count_star",
    }


def test_custom_event_time_field_is_the_window_column() -> None:
    spec = parse(
        "SELECT ts, count(*) FROM S GROUP BY ts WINDOWING 1 s",
        event_time="ts",
        event_time_format="epoch_ms",
    )
    assert spec.event_time.field == "ts"
    assert spec.group_keys == ()
    assert outputs(spec)["ts"] == "window_start"


def test_without_group_by_the_window_is_the_only_group() -> None:
    spec = parse("SELECT count(*) AS n FROM S WINDOWING 1 s")
    assert spec.group_keys == ()
    assert spec.outputs == (OutputColumn(name="n", expression="n"),)


def test_having_over_keys_aliases_and_new_aggregates() -> None:
    spec = parse(
        "SELECT type, count(*) AS c FROM S GROUP BY type "
        "HAVING c > 10 AND type <> 'x' AND max(bytes) < 100 WINDOWING 1 s"
    )
    assert spec.having == "c > 10 AND type <> 'x' AND max_bytes < 100"
    assert aggregates(spec) == [(AggFunc.COUNT, None, "c"), (AggFunc.MAX, "bytes", "max_bytes")]
    assert [o.name for o in spec.outputs] == ["type", "c"]


@pytest.mark.parametrize(
    ("order", "expected"),
    [
        ("ORDER BY c DESC LIMIT 5", TopK(order_by="c", descending=True, limit=5)),
        ("ORDER BY count(*) LIMIT 1", TopK(order_by="c", descending=False, limit=1)),
        ("ORDER BY 2 ASC LIMIT 3", TopK(order_by="c", descending=False, limit=3)),
        ("ORDER BY avg_b DESC LIMIT 2", TopK(order_by="sum_b / c", descending=True, limit=2)),
        ("ORDER BY sum(b) DESC LIMIT 2", TopK(order_by="sum_b", descending=True, limit=2)),
    ],
)
def test_order_by_limit_is_top_k(order: str, expected: TopK) -> None:
    spec = parse(
        "SELECT type, count(*) AS c, sum(b) / count(*) AS avg_b FROM S GROUP BY type "
        f"{order} WINDOWING 1 s"
    )
    assert spec.top_k == expected


def test_quoted_and_dotted_topic_names() -> None:
    assert parse('SELECT count(*) FROM "clicks-v2.eu" WINDOWING 1 s').source_topic == "clicks-v2.eu"
    assert parse("SELECT count(*) FROM logs.web WINDOWING 1 s").source_topic == "logs.web"
    spec = parse("SELECT s.a, count(*) FROM S AS s GROUP BY s.a WINDOWING 1 s")
    assert spec.group_keys == (GroupKey(name="a", expression="a"),)


@pytest.mark.parametrize(
    ("clauses", "size", "slide", "grace"),
    [
        ("WINDOWING 60 s", 60_000, 60_000, 0),
        ("WINDOWING 250 ms", 250, 250, 0),
        ("WINDOWING 2 m", 120_000, 120_000, 0),
        ("WINDOWING 1 h SLIDE 15 minutes", 3_600_000, 900_000, 0),
        ("WINDOWING 1 d GRACE 5 seconds", 86_400_000, 86_400_000, 5_000),
        ("WINDOWING 10 s SLIDE 3 s", 10_000, 3_000, 0),  # any slide <= size is allowed
        ("GRACE 1 s WINDOWING 10 s", 10_000, 10_000, 1_000),
        ("WINDOWING 1.5 s", 1_500, 1_500, 0),
        ("WINDOWING 10 SECONDS SLIDE 10 s GRACE 0 s", 10_000, 10_000, 0),
    ],
)
def test_window_clauses(clauses: str, size: int, slide: int, grace: int) -> None:
    spec = parse(f"SELECT count(*) FROM S {clauses}")
    assert (spec.window.size_ms, spec.window.slide_ms, spec.window.grace_ms) == (size, slide, grace)


@pytest.mark.parametrize(
    "clauses",
    ["WINDOWING SESSION 30 s GRACE 5 s", "GRACE 5 s WINDOWING session 30 seconds"],
)
def test_session_windows(clauses: str) -> None:
    spec = parse(f"SELECT sip, count(*) FROM S GROUP BY sip {clauses}")
    assert spec.window == WindowSpec(size_ms=30_000, slide_ms=30_000, grace_ms=5_000, session=True)
    assert spec.window.gap_ms == 30_000 and not spec.window.tumbling
    assert TaskSpec.from_json_dict(spec.to_json_dict()) == spec


def test_session_is_an_ordinary_column_elsewhere() -> None:
    spec = parse("SELECT session, count(*) FROM S GROUP BY session WINDOWING 1 s")
    assert spec.group_keys == (GroupKey(name="session", expression="session"),)
    assert not spec.window.session


def test_clause_words_inside_strings_and_as_columns_are_not_clauses() -> None:
    spec = parse(
        "SELECT grace, count(*) FROM S WHERE note = 'WINDOWING 5 s' GROUP BY grace WINDOWING 1 s"
    )
    assert spec.where == "note = 'WINDOWING 5 s'"
    assert spec.group_keys == (GroupKey(name="grace", expression="grace"),)
    assert spec.window.size_ms == 1_000


def test_processing_time_makes_timestamp_an_ordinary_column() -> None:
    spec = parse(
        "SELECT timestamp, count(*) FROM S GROUP BY timestamp WINDOWING 1 s",
        event_time="processing",
    )
    assert spec.event_time.field is None
    assert spec.group_keys == (GroupKey(name="timestamp", expression="timestamp"),)


def test_group_by_without_aggregates_is_distinct_keys_per_window() -> None:
    spec = parse("SELECT sip FROM S GROUP BY sip WINDOWING 1 s")
    assert spec.aggregates == ()
    assert outputs(spec) == {"sip": "sip"}


def test_aggregate_of_a_key_alias_expression() -> None:
    spec = parse(
        "SELECT sip AS source, count(*) FROM S WHERE sip IS NOT NULL GROUP BY sip WINDOWING 1 s"
    )
    assert spec.group_keys == (GroupKey(name="sip", expression="sip"),)
    assert outputs(spec) == {"source": "sip", "count_star": "count_star"}
    assert aggregates(spec) == [(AggFunc.COUNT, None, "count_star")]
    assert spec.aggregates == (
        AggregateCall(func=AggFunc.COUNT, argument=None, alias="count_star"),
    )

"""Bad tasks are rejected with a TaskError whose position points at the culprit."""

from __future__ import annotations

from typing import Any

import pytest

from mars.sql import TaskError, parse_task

# (sql, fragment of the message, text found at the error's position)
BAD_QUERIES: list[tuple[str, str, str]] = [
    ("SELECT a, cnt(x) FROM S GROUP BY a WINDOWING 1 s", "unknown function 'cnt'", "cnt(x)"),
    ("SELECT a FROM S WHERE frob(a) WINDOWING 1 s", "unknown function 'frob'", "frob"),
    ("SELECT a, b, count(*) FROM S GROUP BY a WINDOWING 1 s", "column 'b' must appear", "b, count"),
    ("SELECT a + b FROM S GROUP BY a WINDOWING 1 s", "column 'b'", "b FROM"),
    ("SELECT count(*) FROM S HAVING x > 1 WINDOWING 1 s", "column 'x'", "x > 1"),
    ("SELECT count(*) FROM S GROUP BY a", "missing WINDOWING", ""),
    ("SELECT count(*) FROM S WINDOWING 0 s", "window size must be positive", "WINDOWING"),
    ("SELECT count(*) FROM S WINDOWING -5 s", "window size must be positive", "WINDOWING"),
    ("SELECT count(*) FROM S WINDOWING 10 s SLIDE 20 s", "SLIDE must not be larger", "SLIDE"),
    ("SELECT count(*) FROM S WINDOWING 10 s SLIDE 0 s", "SLIDE must be positive", "SLIDE"),
    ("SELECT count(*) FROM S WINDOWING 10 s GRACE -1 s", "GRACE must not be negative", "GRACE"),
    ("SELECT count(*) FROM S WINDOWING 1 m EMIT SOON", "EMIT needs CHANGES", "SOON"),
    ("SELECT count(*) FROM S WINDOWING 1 m EMIT", "EMIT needs CHANGES", ""),
    ("SELECT count(*) FROM S WINDOWING 1 m EMIT CHANGES EVERY", "EVERY needs a duration", ""),
    (
        "SELECT count(*) FROM S WINDOWING 1 m EMIT CHANGES EVERY 5 parsecs",
        "unknown time",
        "parsecs",
    ),
    ("SELECT count(*) FROM S WINDOWING 1 m EMIT CHANGES EVERY 5 ms", "at least 100 ms", "5 ms"),
    ("SELECT count(*) FROM S WINDOWING 1 m EMIT FINAL EVERY 5 s", "EMIT FINAL takes no", "EVERY"),
    (
        "SELECT count(*) FROM S WINDOWING 1 m EMIT CHANGES EMIT FINAL",
        "EMIT is given twice",
        "EMIT F",
    ),
    (
        "SELECT count(*) FROM S WINDOWING 1 m EMIT CHANGES WITH (emit = 'final')",
        "option 'emit' is given twice",
        "emit = ",
    ),
    (
        "SELECT count(*) FROM S WINDOWING 1 m WITH (emit_interval = '5 s')",
        "needs EMIT CHANGES",
        "'5 s'",
    ),
    ("SELECT count(*) FROM S WINDOWING 10 s WINDOWING 5 s", "given twice", "WINDOWING 5"),
    ("SELECT count(*) FROM S WINDOWING SESSION", "needs an inactivity gap", ""),
    ("SELECT count(*) FROM S WINDOWING SESSION 0 s", "session gap must be positive", "WINDOWING"),
    ("SELECT count(*) FROM S WINDOWING SESSION 30", "missing time unit", ""),
    ("SELECT count(*) FROM S WINDOWING SESSION 5 parsecs", "unknown time unit", "parsecs"),
    ("SELECT count(*) FROM S WINDOWING SESSION 5 s SLIDE 1 s", "SLIDE does not apply", "SLIDE"),
    (
        "SELECT count(*) FROM S WINDOWING SESSION 5 s WINDOWING 5 s",
        "given twice",
        "WINDOWING 5",
    ),
    (
        "SELECT a, count(*) AS n FROM S GROUP BY a ORDER BY n LIMIT 3 WINDOWING SESSION 5 s",
        "ORDER BY ... LIMIT does not apply to session windows",
        "n LIMIT",
    ),
    ("SELECT count(*) FROM S WINDOWING 10 parsecs", "unknown time unit 'parsecs'", "parsecs"),
    ("SELECT count(*) FROM S WINDOWING 10", "missing time unit", ""),
    ("SELECT count(*) FROM S WINDOWING", "needs a duration", ""),
    ("SELECT count(*) FROM S WINDOWING 99999 d", "maximum of 10 years", "99999"),
    ("SELECT count(*) FROM S WINDOWING 0.1 ms", "whole number of milliseconds", "0.1"),
    (
        "SELECT count(*) FROM S WINDOWING 1 s WITH (colour = 'red')",
        "unknown option 'colour'",
        "'red'",
    ),
    ("SELECT count(*) FROM S WINDOWING 1 s WITH (buckets = 0)", "from 1 to 1024", "0)"),
    ("SELECT count(*) FROM S WINDOWING 1 s WITH (buckets = 2000)", "from 1 to 1024", "2000"),
    ("SELECT count(*) FROM S WINDOWING 1 s WITH (format = xml)", "'xml' is not one of", "xml"),
    (
        "SELECT count(*) FROM S WINDOWING 1 s WITH (event_time_format = epoch_us)",
        "epoch_us",
        "epoch",
    ),
    (
        "SELECT count(*) FROM S WINDOWING 1 s WITH (idle_timeout = 5 fortnights)",
        "idle_timeout",
        "5 f",
    ),
    ("SELECT count(*) FROM S WINDOWING 1 s WITH (idle_timeout = 0)", "must be positive", "0)"),
    ("SELECT count(*) FROM S WINDOWING 1 s WITH (buckets 4)", "expected '='", " 4)"),
    ("SELECT count(*) FROM S WINDOWING 1 s WITH (buckets = 4", "not closed", ""),
    (
        "SELECT count(*) FROM S WINDOWING 1 s WITH (buckets = 4, buckets = 5)",
        "twice",
        "buckets = 5",
    ),
    (
        "SELECT count(*) FROM S WINDOWING 1 s WITH (csv_columns = 'a,b')",
        "needs format = csv",
        "'a,b'",
    ),
    ("SELECT sum(count(x)) FROM S WINDOWING 1 s", "cannot be nested", "count(x)"),
    (
        "SELECT count(*) FROM S WHERE count(*) > 1 WINDOWING 1 s",
        "not allowed in WHERE",
        "count(*) >",
    ),
    ("SELECT count(*) FROM S GROUP BY sum(a) WINDOWING 1 s", "not allowed in GROUP BY", "sum(a)"),
    ("SELECT * FROM S WINDOWING 1 s", "SELECT * is not supported", "* FROM"),
    ("SELECT S.* FROM S WINDOWING 1 s", "SELECT * is not supported", "S.*"),
    ("SELECT count(*) FROM S JOIN T ON S.a = T.a WINDOWING 1 s", "joins are not supported", "T ON"),
    ("SELECT count(*) FROM S, T WINDOWING 1 s", "joins are not supported", "T WINDOWING"),
    ("SELECT count(*) FROM (SELECT a FROM S) WINDOWING 1 s", "subqueries", "SELECT a"),
    ("SELECT count(*) FROM S WHERE a IN (SELECT b FROM T) WINDOWING 1 s", "subqueries", "SELECT b"),
    ("WITH x AS (SELECT a FROM S) SELECT count(*) FROM x WINDOWING 1 s", "common table", "x AS"),
    ("SELECT a FROM S UNION SELECT a FROM T WINDOWING 1 s", "UNION", "SELECT a FROM S"),
    ("SELECT DISTINCT a FROM S WINDOWING 1 s", "SELECT DISTINCT", ""),
    ("SELECT count(*) FROM S WINDOWING 1 s; SELECT 1", "only one statement", "SELECT 1"),
    ("SELECT count(*) WINDOWING 1 s", "missing FROM", ""),
    ("SELECT a + FROM S WINDOWING 1 s", "syntax error near 'FROM'", "FROM"),
    ("SELECT count(*) FROM S WHERE a = WINDOWING 1 s", "syntax error", ""),
    ("SELECT count(*) FROM S GROUP BY a b c WINDOWING 1 s", "syntax error near 'b'", "b c"),
    ("SELECT count(*) FROM S WHERE a = 'oops WINDOWING 1 s", "cannot read", "'oops"),
    ("SELECT count(*) FROM S WHERE T.a[-1] = 1 WINDOWING 1 s", "whole number from 0", "1] ="),
    ("SELECT count(*) FROM S ORDER BY count(*) WINDOWING 1 s", "ORDER BY needs LIMIT", "count(*)"),
    ("SELECT count(*) FROM S LIMIT 3 WINDOWING 1 s", "LIMIT needs ORDER BY", "3"),
    ("SELECT count(*) AS c FROM S ORDER BY c LIMIT 0 WINDOWING 1 s", "at least 1", "0"),
    ("SELECT a, count(*) FROM S GROUP BY a ORDER BY a, 2 LIMIT 1 WINDOWING 1 s", "one expr", "2"),
    ("SELECT count(*) FROM S GROUP BY 3 WINDOWING 1 s", "position 3", "3"),
    ("SELECT a, a FROM S GROUP BY a WINDOWING 1 s", "two columns named 'a'", "a FROM"),
    ("SELECT a, count(*) AS a FROM S GROUP BY a WINDOWING 1 s", "already a group key", "count"),
    ("SELECT median(x) FROM S WINDOWING 1 s", "exact percentiles are not supported", "median"),
    ("SELECT sum(DISTINCT x) FROM S WINDOWING 1 s", "only supported as COUNT(DISTINCT", "sum"),
    ("SELECT count(DISTINCT a, b) FROM S WINDOWING 1 s", "exactly one expression", "count"),
    ("SELECT count(*) OVER () FROM S WINDOWING 1 s", "window functions", "count"),
    ("SELECT count(*) FROM S WHERE a LIKE b WINDOWING 1 s", "string literal pattern", "a LIKE"),
    ("SELECT count(*) FROM S WHERE CAST(a AS date) = 1 WINDOWING 1 s", "CAST to DATE", "a AS date"),
    (
        "SELECT count(*) FROM S WHERE date_trunc('day', a) = 1 WINDOWING 1 s",
        "unsupported func",
        "date",
    ),
    ("SELECT count(*) FROM S GROUP BY ROLLUP(a) WINDOWING 1 s", "ROLLUP", "a)"),
    ("SELECT count(*) FROM S WHERE a = 0E GROUP BY a WINDOWING 1 s", "is not a number", "0E"),
    ("", "empty task", ""),
]


@pytest.mark.parametrize(("sql", "message", "at"), BAD_QUERIES)
def test_bad_query_is_rejected_at_the_right_place(sql: str, message: str, at: str) -> None:
    with pytest.raises(TaskError) as caught:
        parse_task(sql, task_id="t")
    error = caught.value
    assert message in error.message
    if at:
        assert error.position is not None, error
        assert sql[error.position :].startswith(at), (error.position, sql[error.position :])
        assert str(error).startswith(f"line 1, column {error.position + 1}: ")


def test_error_carries_line_and_column_on_later_lines() -> None:
    sql = "SELECT a,\n       cnt(x)\nFROM S GROUP BY a\nWINDOWING 1 s"
    with pytest.raises(TaskError) as caught:
        parse_task(sql, task_id="t")
    error = caught.value
    assert (error.line, error.column) == (2, 8)
    assert error.position == sql.index("cnt")
    assert str(error) == "line 2, column 8: unknown function 'cnt'"
    assert isinstance(error, ValueError)


def test_syntax_error_position_on_a_later_line() -> None:
    sql = "SELECT count(*)\nFROM S\nGROUP BY a b\nWINDOWING 1 s"
    with pytest.raises(TaskError) as caught:
        parse_task(sql, task_id="t")
    assert (caught.value.line, caught.value.column) == (3, 12)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"colour": "red"}, "unknown option 'colour'"),
        ({"buckets": "many"}, "buckets"),
        ({"buckets": True}, "buckets"),
        ({"format": "csv"}, "needs the option csv_columns"),
        ({"format": "csv", "csv_columns": "a,a"}, "repeated"),
        ({"format": "csv", "csv_columns": "a,timestamp", "csv_delimiter": ";;"}, "one character"),
        ({"format": "csv", "csv_columns": "a,b"}, "event-time field 'timestamp'"),
        ({"event_time": "processing", "event_time_format": "epoch_ms"}, "processing time"),
        ({"output_topic": "bad topic!"}, "not a valid Kafka topic name"),
        ({"idle_timeout": "soon"}, "idle_timeout"),
        ({"idle_timeout": -5}, "must be positive"),
        ({"event_time": ""}, "event_time"),
    ],
)
def test_bad_options_mapping(options: dict[str, Any], message: str) -> None:
    with pytest.raises(TaskError) as caught:
        parse_task("SELECT count(*) FROM S WINDOWING 1 s", task_id="t", options=options)
    assert message in caught.value.message
    assert caught.value.position is None


def test_csv_task_reading_an_undeclared_column_points_at_it() -> None:
    sql = "SELECT a, count(*) FROM S WHERE zz > 1 GROUP BY a WINDOWING 1 s"
    with pytest.raises(TaskError) as caught:
        parse_task(sql, task_id="t", options={"format": "csv", "csv_columns": "a,timestamp"})
    assert "column 'zz' is not one of csv_columns" in caught.value.message
    assert caught.value.position == sql.index("zz")


@pytest.mark.parametrize("task_id", ["", "has space", "a/b", "x" * 201])
def test_bad_task_id(task_id: str) -> None:
    with pytest.raises(TaskError, match="task id"):
        parse_task("SELECT count(*) FROM S WINDOWING 1 s", task_id=task_id)

"""Any text gives a TaskSpec or a TaskError, never another exception (bad SQL -> 4xx)."""

from __future__ import annotations

import contextlib

from hypothesis import example, given, settings
from hypothesis import strategies as st

from mars.sql import TaskError, parse_task, to_polars

WORDS = [
    "SELECT", "FROM", "S", "WHERE", "GROUP", "BY", "HAVING", "ORDER", "LIMIT", "WINDOWING",
    "SLIDE", "GRACE", "WITH", "(", ")", ",", "=", "count(*)", "sum(", "a", "b", "timestamp",
    "60", "-1", "s", "ms", "'x'", "AND", "NOT", "IN", "IS", "NULL", "LIKE", "AS", "*", "+",
    "/", "DESC", "1", "upper(", "DISTINCT", ";", "\n", "buckets", "CASE", "WHEN", "THEN", "END",
]  # fmt: skip


def _parse_or_error(sql: str) -> None:
    try:
        parse_task(sql, task_id="fuzz")
    except TaskError as err:
        assert err.position is None or 0 <= err.position <= len(sql)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(WORDS), max_size=25).map(" ".join))
def test_token_soup_never_crashes(sql: str) -> None:
    _parse_or_error(sql)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60))
@example("0E")  # a number to sqlglot's tokenizer, not to float()
@example("{#")  # a tokenizer error near the end: its position must stay inside the text
def test_arbitrary_text_never_crashes(text: str) -> None:
    _parse_or_error(f"SELECT a, count(*) FROM S WHERE {text} GROUP BY a WINDOWING 1 s")
    with contextlib.suppress(TaskError):
        to_polars(text)

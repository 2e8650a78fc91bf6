"""`WINDOWING CUMULATE <size> STEP <step> [GRACE <g>]`: parsing and its errors."""

from __future__ import annotations

import pytest

from mars.sql import TaskError, parse_task
from mars.tasks.spec import TaskSpec, WindowSpec


@pytest.mark.parametrize(
    "clauses",
    [
        "WINDOWING CUMULATE 1 d STEP 1 m GRACE 5 s",
        "GRACE 5 s STEP 1 minute WINDOWING cumulate 24 hours",
    ],
)
def test_cumulate_windows(clauses: str) -> None:
    spec = parse_task(f"SELECT k, count(*) AS n FROM S GROUP BY k {clauses}", task_id="t")
    assert spec.window == WindowSpec(
        size_ms=86_400_000, slide_ms=60_000, grace_ms=5_000, cumulate=True
    )
    assert not spec.window.tumbling and not spec.window.session
    assert TaskSpec.from_json_dict(spec.to_json_dict()) == spec


def test_top_k_and_having_apply_per_cumulative_window() -> None:
    spec = parse_task(
        "SELECT k, count(*) AS n FROM S GROUP BY k HAVING n > 1 ORDER BY n DESC LIMIT 3 "
        "WINDOWING CUMULATE 1 h STEP 1 m",
        task_id="t",
    )
    assert spec.top_k is not None and spec.top_k.limit == 3 and spec.having == "n > 1"


def test_step_and_cumulate_are_ordinary_columns_elsewhere() -> None:
    spec = parse_task(
        "SELECT step, cumulate, count(*) FROM S GROUP BY step, cumulate WINDOWING 1 s",
        task_id="t",
    )
    assert [key.name for key in spec.group_keys] == ["step", "cumulate"]
    assert not spec.window.cumulate


# (sql, fragment of the message, text found at the error's position)
BAD: list[tuple[str, str, str]] = [
    ("SELECT count(*) FROM S WINDOWING CUMULATE 1 h", "needs STEP", "WINDOWING"),
    ("SELECT count(*) FROM S WINDOWING CUMULATE", "needs a duration", ""),
    ("SELECT count(*) FROM S WINDOWING CUMULATE 1 h STEP", "STEP needs a duration", ""),
    ("SELECT count(*) FROM S WINDOWING 1 h STEP 1 m", "only to WINDOWING CUMULATE", "STEP"),
    ("SELECT count(*) FROM S WINDOWING SESSION 1 h STEP 1 m", "only to WINDOWING CUMULATE", "STEP"),
    ("SELECT count(*) FROM S WINDOWING CUMULATE 1 h STEP 7 m", "multiple of STEP", "STEP"),
    ("SELECT count(*) FROM S WINDOWING CUMULATE 1 h STEP 2 h", "not be larger", "STEP"),
    ("SELECT count(*) FROM S WINDOWING CUMULATE 1 h STEP 0 s", "at least 10 ms", "STEP"),
    ("SELECT count(*) FROM S WINDOWING CUMULATE 1 h STEP 5 ms", "at least 10 ms", "STEP"),
    ("SELECT count(*) FROM S WINDOWING CUMULATE 10 d STEP 10 ms", "at most 100,000", "STEP"),
    ("SELECT count(*) FROM S WINDOWING CUMULATE 0 s STEP 1 s", "must be positive", "WINDOWING"),
    ("SELECT count(*) FROM S WINDOWING CUMULATE 1 h STEP 1 m SLIDE 1 m", "SLIDE does not", "SLIDE"),
    ("SELECT count(*) FROM S WINDOWING CUMULATE 1 h STEP 1 m STEP 2 m", "twice", "STEP 2"),
    (
        "SELECT count(*) FROM S WINDOWING CUMULATE 1 h STEP 1 m GRACE -1 s",
        "GRACE must not be negative",
        "GRACE",
    ),
    (
        "SELECT count(*) FROM S WINDOWING CUMULATE 1 h STEP 1 m EMIT CHANGES",
        "EMIT CHANGES does not apply to cumulative",
        "CHANGES",
    ),
]


@pytest.mark.parametrize(("sql", "message", "at"), BAD)
def test_bad_cumulate_task_is_rejected_at_the_right_place(sql: str, message: str, at: str) -> None:
    with pytest.raises(TaskError) as caught:
        parse_task(sql, task_id="t")
    error = caught.value
    assert message in error.message, error.message
    if at:
        assert error.position is not None, error
        assert sql[error.position :].startswith(at), (error.position, sql[error.position :])


def test_emit_changes_given_as_an_option_is_refused_too() -> None:
    with pytest.raises(TaskError, match="EMIT CHANGES does not apply"):
        parse_task(
            "SELECT count(*) FROM S WINDOWING CUMULATE 1 h STEP 1 m",
            task_id="t",
            options={"emit": "changes"},
        )

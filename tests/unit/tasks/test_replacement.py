"""Replacing a task's query: what is compatible, the spec after, and how old data sets and
windows before the change read under it."""

from __future__ import annotations

from typing import Any

from mars.aggregates import aggregates_for
from mars.engine.dataset import DataSet
from mars.engine.dataset_revisions import fitted
from mars.engine.explain import explain
from mars.engine.finalize import finalize_window, result_spec
from mars.sql import parse_task
from mars.tasks.replacement import RETIRED_PREFIX, incompatibilities, null_before, replaced
from mars.tasks.spec import TaskSpec

OPTIONS = {"event_time": "ts"}
OLD = "SELECT sip, count(*) AS n, max(bytes) AS top FROM flows GROUP BY sip WINDOWING 10 s"


def _spec(sql: str, **options: Any) -> TaskSpec:
    return parse_task(sql, task_id="t", options={**OPTIONS, **options})


def test_compatible_changes_have_no_differences() -> None:
    new = _spec(
        "SELECT sip, count(*) AS n, sum(bytes) AS total FROM flows WHERE bytes > 0 "
        "GROUP BY sip HAVING count(*) > 1 WINDOWING 10 s"
    )
    assert incompatibilities(_spec(OLD), new) == []


def test_each_incompatible_change_is_named() -> None:
    old = _spec(OLD)
    cases = {
        "group keys": "SELECT dip, count(*) AS n FROM flows GROUP BY dip WINDOWING 10 s",
        "window size (ms): 10000 -> 20000": "SELECT sip, count(*) AS n FROM flows "
        "GROUP BY sip WINDOWING 20 s",
        "window kind: tumbling -> hopping": "SELECT sip, count(*) AS n FROM flows "
        "GROUP BY sip WINDOWING 10 s SLIDE 5 s",
        "source topic: flows -> other": "SELECT sip, count(*) AS n FROM other "
        "GROUP BY sip WINDOWING 10 s",
    }
    for expected, sql in cases.items():
        found = incompatibilities(old, _spec(sql))
        assert any(expected in difference for difference in found), (expected, found)
    found = incompatibilities(old, _spec(OLD, event_time="when"))
    assert found == ["event time: ts (epoch_s) -> when (epoch_s)"]


def test_a_session_task_cannot_add_an_aggregate() -> None:
    old = _spec("SELECT sip, count(*) AS n FROM flows GROUP BY sip WINDOWING SESSION 10 s")
    new = _spec(
        "SELECT sip, count(*) AS n, sum(bytes) AS s FROM flows GROUP BY sip WINDOWING SESSION 10 s"
    )
    assert incompatibilities(old, new)[0].startswith("aggregates added to a session-window")


def test_replaced_keeps_positions_renames_retires_and_appends() -> None:
    old = _spec(OLD)
    new = _spec(
        "SELECT sip, count(*) AS rows, sum(bytes) AS total FROM flows GROUP BY sip WINDOWING 10 s"
    )
    spec = replaced(old, new, from_window_ms=20_000)
    assert [(a.func.value, a.alias) for a in spec.aggregates] == [
        ("count", "rows"),
        ("max", f"{RETIRED_PREFIX}1_top"),
        ("sum", "total"),
    ]
    assert null_before(spec) == {2: 20_000}
    assert spec.options.layout.generation == 1
    assert spec.options.layout.current == old.options.layout.current
    assert spec.revisions[-1].sql == new.sql
    assert TaskSpec.from_json_dict(spec.to_json_dict()) == spec
    # Naming the retired aggregate again revives it in its old place, with all its data.
    again = replaced(spec, _spec(OLD), from_window_ms=30_000)
    assert [a.alias for a in again.aggregates] == ["n", "top", f"{RETIRED_PREFIX}2_total"]
    assert again.revisions[-1].added == ()
    plan = explain(spec)
    assert [(a.alias, a.from_window_ms, a.retired) for a in plan.aggregates] == [
        ("rows", None, False),
        (f"{RETIRED_PREFIX}1_top", None, True),
        ("total", 20_000, False),
    ]


def test_windows_before_the_change_give_null_for_an_added_aggregate() -> None:
    spec = replaced(
        _spec(OLD),
        _spec(
            "SELECT sip, count(*) AS n, sum(bytes) AS total FROM flows GROUP BY sip WINDOWING 10 s"
        ),
        from_window_ms=20_000,
    )
    states = {("a",): [3, 9, 12]}
    full = result_spec(spec)
    before = finalize_window(full, 10_000, states)
    after = finalize_window(full, 20_000, states)
    assert before[0]["total"] is None and before[0]["n"] == 3
    assert after[0]["total"] == 12
    assert not any(name.startswith(RETIRED_PREFIX) for name in after[0])


def test_an_old_data_set_is_padded_with_the_added_states() -> None:
    old = _spec(OLD)
    spec = replaced(
        old,
        _spec("SELECT sip, count(*) AS n, sum(bytes) AS t FROM flows GROUP BY sip WINDOWING 10 s"),
        from_window_ms=20_000,
    )
    written = DataSet(aggregates=aggregates_for(old.aggregates), windows={0: {("a",): [2, 7]}})
    read = fitted(written, aggregates_for(spec.aggregates))
    assert read.aggregate_names == ("count_all", "max", "sum")
    assert read.windows == {0: {("a",): [2, 7, aggregates_for(spec.aggregates)[2].initial()]}}
    # Not a prefix (another task's layout): left for the reader's own check to refuse.
    other = DataSet(aggregates=aggregates_for(spec.aggregates)[2:], windows={})
    assert fitted(other, aggregates_for(spec.aggregates)) is other

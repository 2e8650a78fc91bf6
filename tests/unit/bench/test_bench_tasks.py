"""The tasks experiment's pure parts: the task shapes are valid SQL over different fields, when
a task's results are complete, the figures per task count, the target's verdict and the report
section."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import pytest

from benchmarks.codec import to_json
from benchmarks.report import SECTIONS, render_report
from benchmarks.report_tasks import TASKS_HEADING, tasks_section
from benchmarks.results_reader import WindowSeen
from benchmarks.runner import BenchConfig
from benchmarks.targets import check_targets
from benchmarks.task_figures import (
    CountFigures,
    Shape,
    TasksResult,
    TasksRun,
    count_summary,
    tasks_verdict,
    with_time_ratios,
)
from benchmarks.task_shapes import COUNT_FIELD, SHAPES, Completion, data_windows, shapes_for
from benchmarks.workload import Dataset
from mars.sql import parse_task
from mars.tasks.spec import TaskSpec

DATA = Dataset(
    topic="S",
    partitions=4,
    records=300_000,
    mean_bytes=144.0,
    start_s=1_700_000_000,  # 20 s into a minute: the first and last 60 s windows are partial
    span_s=600,
    produce_rate=1.0,
    sentinel_s=1_700_000_000 + 600 + 86_400,
)


def spec_of(name: str) -> TaskSpec:
    (shape,) = [s for s in SHAPES if s.name == name]
    return parse_task(shape.sql("S"), task_id=f"t-{name}")


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: s.name)
def test_every_shape_is_a_valid_task_that_counts_its_records(shape: Any) -> None:
    spec = parse_task(shape.sql("S"), task_id="t-1")
    assert spec.source_topic == "S"
    assert spec.options.csv is not None
    assert COUNT_FIELD in [a.alias for a in spec.aggregates]


def test_the_shapes_read_different_fields_and_aggregates() -> None:
    specs = [spec_of(s.name) for s in SHAPES]
    keys = {tuple(k.name for k in spec.group_keys) for spec in specs}
    assert len(keys) == len(SHAPES)
    funcs = {a.func.value for spec in specs for a in spec.aggregates}
    assert {"count", "sum", "count_distinct", "avg", "max"} <= funcs
    assert any(not spec.window.tumbling for spec in specs)
    assert any(spec.top_k is not None for spec in specs)


def test_tasks_are_drawn_round_robin() -> None:
    drawn = [s.name for s in shapes_for(12)]
    assert drawn[:5] == [s.name for s in SHAPES]
    assert drawn[5:10] == drawn[:5] and drawn[10:] == drawn[:2]
    assert [s.name for s in shapes_for(1)] == ["paper"]


def test_data_windows_cover_the_data_span() -> None:
    tumbling = data_windows(spec_of("top_k"), DATA)
    assert len(tumbling) == 11  # the span starts 20 s into a minute
    assert tumbling[0] == 1_699_999_980_000 and tumbling[-1] == 1_700_000_580_000
    hopping = data_windows(spec_of("hopping"), DATA)
    assert len(hopping) == 12 and hopping[0] == 1_699_999_920_000


def test_completion_sums_counts_times_the_windows_a_record_falls_in() -> None:
    assert Completion.of(spec_of("paper"), DATA).total == 300_000
    hopping = Completion.of(spec_of("hopping"), DATA)
    assert hopping.total == 600_000
    end = DATA.window_ends_s * 1000
    half = {end - 60_000: WindowSeen(count=300_000), end + 86_400_000: WindowSeen(count=4)}
    assert not hopping.met(half)  # the sentinels' window does not count
    assert hopping.met({**half, end - 120_000: WindowSeen(count=300_000)})


def test_a_top_k_task_is_complete_when_every_data_window_has_its_rows() -> None:
    completion = Completion.of(spec_of("top_k"), DATA)
    assert completion.total is None and completion.rows == 10 and len(completion.windows) == 11
    seen = {start: WindowSeen(rows=10, count=5) for start in completion.windows}
    assert completion.met(seen)
    first = completion.windows[0]
    assert not completion.met({**seen, first: WindowSeen(rows=9)})
    assert not completion.met({s: w for s, w in seen.items() if s != first})


def run(seconds: float, cpu: float, *, complete: bool = True, completed: int = 0) -> TasksRun:
    return TasksRun(
        seconds=seconds,
        records_per_s=300_000 / seconds,
        cpu_s=cpu,
        complete=complete,
        completed=completed,
        slowest_by_shape_s={"paper": seconds - 0.5, "distinct": seconds},
    )


def tasks_result(ten: list[float]) -> TasksResult:
    by_count = {
        "1": count_summary([run(4.0, 3.0), run(5.0, 3.5), run(4.5, 3.2)]),
        "10": count_summary([run(s, 20.0) for s in ten]),
    }
    return TasksResult(
        mappers=2,
        reducers=1,
        records=300_000,
        counts=[1, 10],
        shapes=[Shape(name=s.name, what=s.what, sql=s.sql("S")) for s in SHAPES],
        by_count=with_time_ratios(by_count),
    )


def tasks_found(ten: list[float]) -> dict[str, Any]:
    """`tasks_result` as the results file keeps it."""
    found: dict[str, Any] = to_json(tasks_result(ten))
    return found


def test_time_ratio_is_the_ratio_of_medians_with_per_run_ratios() -> None:
    found = tasks_result([18.0, 22.5, 20.0]).by_count
    assert found["1"].time_ratio == 1.0
    assert found["10"].time_ratio == pytest.approx(20.0 / 4.5)
    assert found["10"].time_ratio_runs == pytest.approx([18 / 4, 22.5 / 5, 20 / 4.5])


def test_an_incomplete_run_counts_as_missing() -> None:
    summary = count_summary([run(4.0, 3.0), run(9.0, 3.0, complete=False)])
    assert summary.seconds.median == 4.0
    assert math.isnan(summary.seconds.runs[1])


def test_verdict_met_missed_and_not_measured() -> None:
    met = tasks_verdict(tasks_result([12.0, 13.5, 14.0]))
    assert met.met is True and met.missed_by == 0.0
    assert "**met**" in met.text() and "3.00x" in met.text()
    missed = tasks_verdict(tasks_result([23.4, 23.4, 23.4]))  # 23.4 / 4.5 = 5.2x
    assert missed.met is False and missed.missed_by == pytest.approx(2.2)
    assert "**missed** by 2.20x (73% over the 3x allowed)" in missed.text()
    quick = tasks_verdict(TasksResult(by_count={"1": CountFigures(), "3": CountFigures()}))
    assert quick.met is None and "not measured" in quick.text()
    assert tasks_verdict(None).met is None


def test_section_shows_each_count_and_the_verdict() -> None:
    text = render_report({"tasks": tasks_found([23.4, 22.0, 25.0])}, images={})
    assert f"{TASKS_HEADING}\n\n1, 10 tasks registered at once" in text
    assert "| 1 | 4.5 (4.0–5.0) | 66,667 (60,000–75,000) | 3.2 (3.0–3.5) | 3.20 | 1.00x |" in text
    assert (
        "| 10 | 23.4 (22.0–25.0) |" in text and "| 5.20x (4.40x–5.85x) | distinct (23.4) |" in text
    )
    assert "**missed** by 2.20x" in text
    assert "- top_k: top 10 devices" in text and "WITH (" not in text
    assert f"{TASKS_HEADING}\n\nNot run.\n" in render_report({}, images={})


def test_report_and_targets_carry_the_tasks_experiment() -> None:
    assert SECTIONS["tasks"] == (TASKS_HEADING,)
    results = {"machine": {}, "tasks": tasks_found([12.0, 13.5, 14.0])}
    assert TASKS_HEADING in render_report(results, images={})
    rows = {row.name: row for row in check_targets(results)}
    row = rows["10 tasks over one topic, time vs one task"]
    assert row.met is True and row.measured == "3.00x" and row.target == "<= 3x"
    missing = {row.name: row for row in check_targets({})}
    assert missing["10 tasks over one topic, time vs one task"].met is None


def test_quick_runs_fewer_tasks() -> None:
    quick = BenchConfig.build(quick=True, runs=None, experiments=("tasks",), command="x")
    full = BenchConfig.build(quick=False, runs=None, experiments=("tasks",), command="x")
    assert quick.of("tasks").counts == (1, 3) and quick.records < full.records
    assert full.of("tasks").counts == (1, 10, 50, 100) and full.runs == 3
    assert quick.of("tasks").warmup_tasks == 0 and full.of("tasks").warmup_tasks == 10


def test_the_section_names_the_warm_up_run_when_there_was_one() -> None:
    found = tasks_result([12.0, 13.5, 14.0])
    assert "not counted" not in tasks_section(found)
    warmed = tasks_section(dataclasses.replace(found, warmup_tasks=10))
    assert "interleaved over the task counts, after one run of 10 tasks that is not counted" in (
        warmed
    )


def test_an_incomplete_count_says_how_many_tasks_completed() -> None:
    found = tasks_result([12.0, 13.5, 14.0])
    partial = run(600.0, 900.0, complete=False, completed=45)
    by_count = with_time_ratios({**found.by_count, "50": count_summary([partial])})
    text = tasks_section(dataclasses.replace(found, by_count=by_count))
    assert (
        "| 50 | — (incomplete: 45/50 tasks complete at the timeout) | — | — | — | — | — |" in text
    )

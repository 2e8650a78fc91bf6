"""The statistics experiment's pure parts: its shapes are valid tasks with the aggregates it
measures, and its section shows each shape's rate, CPU per million records and the ratios to
the plain query."""

from __future__ import annotations

from benchmarks.codec import to_json
from benchmarks.report import SECTIONS, render_report
from benchmarks.report_statistics import STATISTICS_HEADING
from benchmarks.task_figures import StatisticsResult, TasksRun, count_summary
from benchmarks.task_shapes import COUNT_FIELD, STATISTICS_SHAPES
from mars.sql import parse_task
from mars.tasks.spec import AggFunc


def test_the_shapes_are_the_reference_query_and_it_with_a_percentile_and_stddev() -> None:
    plain, stats = (parse_task(s.sql("S"), task_id=f"t-{s.name}") for s in STATISTICS_SHAPES)
    assert [a.func for a in plain.aggregates] == [AggFunc.COUNT]
    assert [a.func for a in stats.aggregates] == [
        AggFunc.COUNT,
        AggFunc.APPROX_PERCENTILE,
        AggFunc.STDDEV_SAMP,
    ]
    assert stats.aggregates[1].parameters == (0.99,)
    assert plain.group_keys == stats.group_keys and plain.window == stats.window
    assert COUNT_FIELD in [a.alias for a in stats.aggregates]


def _runs(seconds: list[float], cpu: float) -> list[TasksRun]:
    return [
        TasksRun(tasks=1, seconds=s, records_per_s=1_000_000 / s, complete=True, cpu_s=cpu)
        for s in seconds
    ]


def test_section_shows_rates_cpu_per_million_and_ratios_to_the_plain_query() -> None:
    found = StatisticsResult(
        mappers=2,
        reducers=1,
        records=1_000_000,
        by_shape={
            "paper": count_summary(_runs([2.0, 2.5, 3.0], cpu=4.0)),
            "paper_stats": count_summary(_runs([3.0, 3.5, 4.0], cpu=6.0)),
        },
    )
    text = render_report({"statistics": to_json(found)}, images={})
    assert SECTIONS["statistics"] == (STATISTICS_HEADING,)
    assert "| paper | 2.5 (2.0–3.0) | 400,000 (333,333–500,000) | 4.00 | 1.00x | 1.00x |" in text
    assert "| paper_stats | 3.5 (3.0–4.0) |" in text and "| 6.00 | 1.40x | 1.50x |" in text
    assert f"{STATISTICS_HEADING}\n\nNot run.\n" in render_report({}, images={})

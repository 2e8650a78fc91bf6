"""Section 11 of `docs/benchmarks.md`: many tasks over one topic (the tasks experiment), from
its results."""

from __future__ import annotations

import math

from benchmarks.experiment import render
from benchmarks.report_format import bullets, fmt, med
from benchmarks.stats import median
from benchmarks.task_figures import CountFigures, TasksResult, TasksRun, tasks_verdict

TASKS_HEADING = "## 11. Many tasks over one topic"


def tasks_section(found: TasksResult) -> str:
    return render(
        "tasks",
        counts=", ".join(str(c) for c in found.counts),
        records=fmt(found.records),
        mappers=found.mappers,
        reducers=found.reducers,
        warmup=(
            f", after one run of {found.warmup_tasks} tasks that is not counted (the bench's "
            "broker starts with the invocation, and its JIT compiles through the first runs)"
            if found.warmup_tasks
            else ""
        ),
        rows="\n".join(_row(int(count), point) for count, point in found.by_count.items()),
        verdict=tasks_verdict(found).text(),
        shapes=bullets(f"{s.name}: {s.what}; `{_select(s.sql)}`" for s in found.shapes),
        notes=bullets(found.notes),
    )


def _row(count: int, point: CountFigures) -> str:
    runs = [r for r in point.time_ratio_runs if not math.isnan(r)]
    spread = f" ({_times(min(runs))}–{_times(max(runs))})" if len(runs) > 1 and count > 1 else ""
    incomplete = [f"{r.completed}/{count}" for r in point.runs if not r.complete]
    note = (
        f" (incomplete: {', '.join(incomplete)} tasks complete at the timeout)"
        if incomplete
        else ""
    )
    return (
        f"| {count} | {med(point.seconds, '.1f')}{note} | {med(point.records_per_s)} "
        f"| {med(point.cpu_s, '.1f')} | {fmt(point.cpu_s.median / count, '.2f')} "
        f"| {_times(point.time_ratio)}{spread} "
        f"| {_slowest([r for r in point.runs if r.complete])} |"
    )


def _times(value: float) -> str:
    return "—" if math.isnan(value) else f"{value:.2f}x"


def _slowest(runs: list[TasksRun]) -> str:
    """The shape whose tasks finished last, by the median over the (complete) runs of each
    shape's slowest task."""
    by_shape: dict[str, list[float]] = {}
    for run in runs:
        for name, seconds in run.slowest_by_shape_s.items():
            by_shape.setdefault(name, []).append(seconds)
    if not by_shape:
        return "—"
    medians = {name: median(values) for name, values in by_shape.items()}
    name = max(medians, key=lambda n: medians[n])
    return f"{name} ({fmt(medians[name], '.1f')})"


def _select(sql: str) -> str:
    """The task's SQL without its WITH clause (the CSV options, the same for every shape)."""
    return sql.split(" WITH (")[0].strip()

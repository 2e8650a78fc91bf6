"""Section 11 of `docs/benchmarks.md`: many tasks over one topic (the tasks experiment), from
its results."""

from __future__ import annotations

import math
from typing import Any

from benchmarks.report_format import fmt, med
from benchmarks.stats import median
from benchmarks.task_figures import tasks_verdict

TASKS_HEADING = "## 11. Many tasks over one topic"


def tasks_section(found: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    counts = ", ".join(str(c) for c in found["counts"])
    return [
        *lines,
        f"{counts} tasks registered at once over the preloaded topic S "
        f"({fmt(found['records'])} records), drawn round-robin from the five shapes below, "
        f"with the processes of the Mars end-to-end run ({found['mappers']} mappers + "
        f"{found['reducers']} reducer, started and idle before the registration). Seconds: "
        "from registering the first task until every task's every data window is readable "
        "(read_committed) in its own result topic (one consumer reads them all); records "
        "processed: tasks x records over those seconds; CPU seconds: the mappers + reducers "
        "from the registration. Each run has its own ZooKeeper root, consumer group and fresh "
        "task ids; its tasks' Redis keys and topics are deleted after it. Runs are "
        "interleaved over the task counts; time vs 1 task is the ratio of the medians (in "
        "brackets: run i over run i of one task).",
        "",
        "| tasks | seconds | records processed/s | CPU seconds | CPU seconds per task "
        "| time vs 1 task | slowest shape (median s) |",
        "|---:|---:|---:|---:|---:|---:|---|",
        *[_row(int(count), point) for count, point in found["by_count"].items()],
        "",
        tasks_verdict(found).text(),
        "",
        "The shapes (each also counts `count(*)`, so a task's results tell when they are all "
        "there; a top-k task: when every data window has its k rows):",
        "",
        *[
            f"- {shape['name']}: {shape['what']}; `{_select(shape['sql'])}`"
            for shape in found["shapes"]
        ],
        "",
        *[f"- {note}" for note in found.get("notes", [])],
        *([""] if found.get("notes") else []),
    ]


def _row(count: int, point: dict[str, Any]) -> str:
    cpu = point["cpu_s"]
    runs = [r for r in point.get("time_ratio_runs", []) if not math.isnan(r)]
    spread = f" ({_times(min(runs))}–{_times(max(runs))})" if len(runs) > 1 and count > 1 else ""
    incomplete = [f"{r['completed']}/{count}" for r in point["runs"] if not r["complete"]]
    note = (
        f" (incomplete: {', '.join(incomplete)} tasks complete at the timeout)"
        if incomplete
        else ""
    )
    return (
        f"| {count} | {med(point['seconds'], '.1f')}{note} | {med(point['records_per_s'])} "
        f"| {med(cpu, '.1f')} | {fmt(cpu['median'] / count, '.2f')} "
        f"| {_times(point['time_ratio'])}{spread} "
        f"| {_slowest([r for r in point['runs'] if r['complete']])} |"
    )


def _times(value: float) -> str:
    return "—" if math.isnan(value) else f"{value:.2f}x"


def _slowest(runs: list[dict[str, Any]]) -> str:
    """The shape whose tasks finished last, by the median over the (complete) runs of each
    shape's slowest task."""
    by_shape: dict[str, list[float]] = {}
    for run in runs:
        for name, seconds in run.get("slowest_by_shape_s", {}).items():
            by_shape.setdefault(name, []).append(seconds)
    if not by_shape:
        return "—"
    medians = {name: median(values) for name, values in by_shape.items()}
    name = max(medians, key=lambda n: medians[n])
    return f"{name} ({fmt(medians[name], '.1f')})"


def _select(sql: str) -> str:
    """The task's SQL without its WITH clause (the CSV options, the same for every shape)."""
    return sql.split(" WITH (")[0].strip()

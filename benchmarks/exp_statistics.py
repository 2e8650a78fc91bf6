"""Experiment 13: what the statistics aggregates cost on the reference query.

The reference query alone, and with `APPROX_PERCENTILE(bytes, 0.99)` (a KLL sketch per group)
and `STDDEV(bytes)` (count, mean, M2 per group) added, each registered alone over the
preloaded topic S with the processes of the Mars end-to-end run, runs interleaved between the
two shapes so that run i of each met the same machine. Seconds: from registering the task until
every data window is readable (read_committed); records/s: the records over those seconds;
CPU seconds: the mappers + reducers from the registration, per million records.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from benchmarks.exp_tasks import shapes_run
from benchmarks.experiment import Base, Context, Section
from benchmarks.report_statistics import STATISTICS_HEADING, statistics_section
from benchmarks.task_figures import Shape, StatisticsResult, TasksRun, count_summary
from benchmarks.task_shapes import STATISTICS_SHAPES


def statistics_experiment(ctx: Context) -> StatisticsResult:
    data = ctx.dataset()
    found: dict[str, list[TasksRun]] = {shape.name: [] for shape in STATISTICS_SHAPES}
    notes: list[str] = []
    for index in range(ctx.config.runs):
        for shape in STATISTICS_SHAPES:
            run, run_notes = shapes_run(ctx, [shape], label="stats")
            notes += run_notes
            found[shape.name].append(run)
            ctx.log(
                f"  {shape.name} run {index + 1}: {run.seconds:.1f} s, "
                f"{run.records_per_s:,.0f} records/s, {run.cpu_s:.1f} CPU s"
            )
    return StatisticsResult(
        mappers=ctx.config.mappers,
        reducers=ctx.config.reducers,
        records=data.records,
        shapes=[Shape(name=s.name, what=s.what, sql=s.sql(data.topic)) for s in STATISTICS_SHAPES],
        by_shape={name: count_summary(runs) for name, runs in found.items()},
        notes=notes,
    )


@dataclass(frozen=True, slots=True)
class StatisticsSettings:
    QUICK: ClassVar[dict[str, object]] = {}


class Statistics(Base[StatisticsSettings, StatisticsResult]):
    """Experiment 13 (the module's docstring)."""

    name = "statistics"
    title = "experiment 13, the cost of percentiles and standard deviation"
    sections = (Section(13, STATISTICS_HEADING),)
    uses_dataset = True
    settings_type = StatisticsSettings
    result_type = StatisticsResult

    def run(self, ctx: Context, settings: StatisticsSettings) -> StatisticsResult:
        return statistics_experiment(ctx)

    def report(self, result: StatisticsResult | None, images: Mapping[str, str]) -> tuple[str, ...]:
        return (statistics_section(result),) if result else self.not_run()

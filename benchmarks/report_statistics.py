"""Section 13 of `docs/benchmarks.md`: the cost of percentiles and standard deviation (the
statistics experiment), from its results."""

from __future__ import annotations

import math

from benchmarks.experiment import render
from benchmarks.report_format import bullets, fmt, med
from benchmarks.stats import ratio
from benchmarks.task_figures import CountFigures, StatisticsResult

STATISTICS_HEADING = "## 13. Percentiles and standard deviation on the reference query"


def statistics_section(found: StatisticsResult) -> str:
    plain = next(iter(found.by_shape.values()), CountFigures())
    return render(
        "statistics",
        records=fmt(found.records),
        mappers=found.mappers,
        reducers=found.reducers,
        rows="\n".join(
            _row(name, point, plain, found.records) for name, point in found.by_shape.items()
        ),
        shapes=bullets(f"{s.name}: {s.what}; `{s.sql.split(' WITH ')[0]}`" for s in found.shapes),
        notes=bullets(found.notes),
    )


def cpu_per_million(point: CountFigures, records: int) -> float:
    """Median CPU seconds of the mappers + reducers per million records."""
    return ratio(point.cpu_s.median, records / 1e6)


def _row(name: str, point: CountFigures, plain: CountFigures, records: int) -> str:
    return (
        f"| {name} | {med(point.seconds, '.1f')} | {med(point.records_per_s)} "
        f"| {fmt(cpu_per_million(point, records), '.2f')} "
        f"| {_times(ratio(point.seconds.median, plain.seconds.median))} "
        f"| {_times(ratio(point.cpu_s.median, plain.cpu_s.median))} |"
    )


def _times(value: float) -> str:
    return "—" if math.isnan(value) else f"{value:.2f}x"

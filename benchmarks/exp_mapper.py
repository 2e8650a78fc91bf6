"""Experiments 1 and 2: mapper throughput vs batch size, and vs number of mapper processes.

Mappers only (no reducer), backpressure marks raised out of reach, so what is measured is
Kafka -> decode -> pre-aggregate -> Redis. The rate is the steady state between 10 % and 90 %
of the records (group join and the tail left out), from the task's exact `records_in`
counter in Redis sampled every 100 ms. Small batches are capped by time (`cap_s` after the
first progress) instead of reading the whole topic.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from benchmarks.experiment import Base, Context, Section, render
from benchmarks.harness import BenchCluster
from benchmarks.report_format import fmt, image, med
from benchmarks.stats import Summary, first_to_last_rate, steady_rate
from benchmarks.workload import Dataset, paper_sql
from mars.config import MAPPER_BATCH_SIZE


@dataclass(frozen=True, slots=True, kw_only=True)
class MapperRun:
    records: int
    seconds_capped: bool
    steady_rps: float
    overall_rps: float
    cpu_s: float  # all mappers together
    records_per_cpu_s: float


def mapper_run(
    bench: BenchCluster,
    data: Dataset,
    *,
    mappers: int,
    batch_size: int,
    cap_s: float | None,
    timeout_s: float = 600.0,
) -> MapperRun:
    with bench.run(batch_size=batch_size) as run:
        run.start_mappers(mappers)
        run.register(paper_sql(data.topic))
        samples = run.wait_records_in(data.records, timeout_s=timeout_s, cap_s=cap_s)
        figures = run.figures()["mappers"]
    cpu = sum(f.cpu_s or 0.0 for f in figures)
    done = samples[-1].done if samples else 0
    return MapperRun(
        records=done,
        seconds_capped=done < data.records,
        steady_rps=steady_rate(samples),
        overall_rps=first_to_last_rate(samples),
        cpu_s=cpu,
        records_per_cpu_s=done / cpu if cpu > 0 else math.nan,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class MapperPoint:
    """One batch size's or mapper count's runs (`cap_s`: the time cap of small batches)."""

    records_per_s: Summary = field(default_factory=Summary)
    mb_per_s: Summary = field(default_factory=Summary)
    overall_records_per_s: Summary = field(default_factory=Summary)
    records_per_cpu_s: Summary = field(default_factory=Summary)
    records_read: list[int] = field(default_factory=list)
    capped: bool = False
    cap_s: float | None = None

    @classmethod
    def of(cls, runs: list[MapperRun], data: Dataset, *, cap_s: float | None) -> MapperPoint:
        rps = [r.steady_rps for r in runs]
        return cls(
            records_per_s=Summary.of(rps),
            mb_per_s=Summary.of([v * data.mean_bytes / 1e6 for v in rps]),
            overall_records_per_s=Summary.of([r.overall_rps for r in runs]),
            records_per_cpu_s=Summary.of([r.records_per_cpu_s for r in runs]),
            records_read=[r.records for r in runs],
            capped=any(r.seconds_capped for r in runs),
            cap_s=cap_s,
        )


# batch size or mapper count (as the JSON keys it: a string) -> its runs
MapperPoints = dict[str, MapperPoint]


@dataclass(frozen=True, slots=True)
class BatchSettings:
    batch_sizes: tuple[int, ...] = (1, 10, 100, 1_000, 5_000, 10_000, 50_000)
    small_batch_cap_s: float = 15.0  # batches up to 100 are capped by time
    QUICK: ClassVar[dict[str, object]] = {"small_batch_cap_s": 5.0}


@dataclass(frozen=True, slots=True)
class ProcessSettings:
    process_counts: tuple[int, ...] = (1, 2, 4)


class BatchSize(Base[BatchSettings, MapperPoints]):
    """Experiment 1: one mapper process; the same topic re-read with each batch size."""

    name = "batch"
    title = "experiment 1, mapper throughput vs batch size"
    sections = (Section(1, "## 1. Mapper throughput vs batch size"),)
    uses_dataset = True
    settings_type = BatchSettings
    result_type = MapperPoints

    def run(self, ctx: Context, settings: BatchSettings) -> MapperPoints:
        found = {}
        for batch_size in settings.batch_sizes:
            cap = settings.small_batch_cap_s if batch_size <= 100 else None
            measured = []
            for index in range(ctx.config.runs):
                result = mapper_run(
                    ctx.bench, ctx.dataset(), mappers=1, batch_size=batch_size, cap_s=cap
                )
                ctx.log(
                    f"  batch {batch_size:>6} run {index + 1}: {result.steady_rps:>10,.0f} "
                    f"rec/s, {result.records_per_cpu_s:>10,.0f} rec/CPU-s"
                )
                measured.append(result)
            found[str(batch_size)] = MapperPoint.of(measured, ctx.dataset(), cap_s=cap)
        return found

    def report(self, result: MapperPoints | None, images: Mapping[str, str]) -> tuple[str, ...]:
        if not result:
            return self.not_run()
        rows = []
        for size, point in result.items():
            capped = f" (capped at {point.cap_s:.0f} s)" if point.cap_s else ""
            read = ", ".join(fmt(r) for r in point.records_read)
            rows.append(
                f"| {int(size):,} | {med(point.records_per_s)} | {med(point.mb_per_s, '.1f')} "
                f"| {med(point.records_per_cpu_s)} | {read}{capped} |"
            )
        image_line = image(images, "batch", "mapper throughput vs batch size")
        return (render("batch", rows="\n".join(rows), image=image_line),)


class ProcessCount(Base[ProcessSettings, MapperPoints]):
    """Experiment 2: 1, 2, 4 mapper processes in one group over the same topic."""

    name = "processes"
    title = "experiment 2, throughput vs mapper processes"
    sections = (Section(2, "## 2. Throughput vs number of mapper processes"),)
    uses_dataset = True
    settings_type = ProcessSettings
    result_type = MapperPoints

    def run(self, ctx: Context, settings: ProcessSettings) -> MapperPoints:
        found = {}
        for count in settings.process_counts:
            measured = []
            for index in range(ctx.config.runs):
                result = mapper_run(
                    ctx.bench,
                    ctx.dataset(),
                    mappers=count,
                    batch_size=MAPPER_BATCH_SIZE,
                    cap_s=None,
                )
                ctx.log(f"  {count} mappers run {index + 1}: {result.steady_rps:>10,.0f} rec/s")
                measured.append(result)
            found[str(count)] = MapperPoint.of(measured, ctx.dataset(), cap_s=None)
        return found

    def report(self, result: MapperPoints | None, images: Mapping[str, str]) -> tuple[str, ...]:
        if not result:
            return self.not_run()
        rows = [
            f"| {count} | {med(point.records_per_s)} | {med(point.mb_per_s, '.1f')} "
            f"| {med(point.records_per_cpu_s)} |"
            for count, point in result.items()
        ]
        image_line = image(images, "processes", "throughput vs mapper processes")
        return (
            render(
                "processes",
                batch_size=f"{MAPPER_BATCH_SIZE:,}",
                rows="\n".join(rows),
                image=image_line,
            ),
        )

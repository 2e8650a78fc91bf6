"""Experiments 1 and 2: mapper throughput vs batch size, and vs number of mapper processes.

Mappers only (no reducer), backpressure marks raised out of reach, so what is measured is
Kafka -> decode -> pre-aggregate -> Redis. The rate is the steady state between 10 % and 90 %
of the records (group join and the tail left out), from the task's exact `records_in`
counter in Redis sampled every 100 ms. Small batches are capped by time (`cap_s` after the
first progress) instead of reading the whole topic.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from benchmarks.harness import BenchCluster
from benchmarks.stats import first_to_last_rate, steady_rate, summarize
from benchmarks.workload import Dataset, paper_sql


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


def _summary(runs: list[MapperRun], data: Dataset) -> dict[str, Any]:
    rps = [r.steady_rps for r in runs]
    summary = summarize(rps)
    return {
        "records_per_s": summary,
        "mb_per_s": summarize([v * data.mean_bytes / 1e6 for v in rps]),
        "overall_records_per_s": summarize([r.overall_rps for r in runs]),
        "records_per_cpu_s": summarize([r.records_per_cpu_s for r in runs]),
        "records_read": [r.records for r in runs],
        "capped": any(r.seconds_capped for r in runs),
    }


def batch_size_experiment(
    bench: BenchCluster,
    data: Dataset,
    *,
    batch_sizes: list[int],
    runs: int,
    small_batch_cap_s: float,
    log: Any = print,
) -> dict[str, Any]:
    """One mapper process; the same topic re-read with each batch size."""
    results: dict[str, Any] = {}
    for batch_size in batch_sizes:
        cap = small_batch_cap_s if batch_size <= 100 else None
        measured = []
        for index in range(runs):
            result = mapper_run(bench, data, mappers=1, batch_size=batch_size, cap_s=cap)
            log(
                f"  batch {batch_size:>6} run {index + 1}: {result.steady_rps:>10,.0f} rec/s, "
                f"{result.records_per_cpu_s:>10,.0f} rec/CPU-s"
            )
            measured.append(result)
        results[str(batch_size)] = {**_summary(measured, data), "cap_s": cap}
    return results


def process_count_experiment(
    bench: BenchCluster,
    data: Dataset,
    *,
    process_counts: list[int],
    batch_size: int,
    runs: int,
    log: Any = print,
) -> dict[str, Any]:
    """1, 2, 4 mapper processes in one group over the same topic."""
    results: dict[str, Any] = {}
    for count in process_counts:
        measured = []
        for index in range(runs):
            result = mapper_run(bench, data, mappers=count, batch_size=batch_size, cap_s=None)
            log(f"  {count} mappers run {index + 1}: {result.steady_rps:>10,.0f} rec/s")
            measured.append(result)
        results[str(count)] = _summary(measured, data)
    return results

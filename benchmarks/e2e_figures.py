"""Experiments 3 and 5's results: each system's runs summed up, the consume+decode ceilings
and the Mars processes' memory (pure: runs in, summaries out)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from benchmarks.stats import Summary, summaries
from benchmarks.workload import Dataset

PEER_NAMES = {
    "spark": "PySpark Structured Streaming",
    "quix": "Quix Streams",
    "flink": "Flink SQL",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class SystemFigures:
    """One system's runs (each as its runner measured it: the peers' carry their own
    figures) and their summaries: the marginal rate (start-up excluded), the rate with
    start-up, CPU seconds (per million records too) and start-up. `processes` (Quix
    Streams), `parallelism` (Flink SQL) and `settings` (both) describe a peer."""

    runs: list[dict[str, Any]] = field(default_factory=list)
    seconds: Summary = field(default_factory=Summary)
    records_per_s: Summary = field(default_factory=Summary)
    mb_per_s: Summary = field(default_factory=Summary)
    records_per_s_with_startup: Summary = field(default_factory=Summary)
    cpu_s: Summary = field(default_factory=Summary)
    cpu_s_per_million: Summary = field(default_factory=Summary)
    startup_s: Summary = field(default_factory=Summary)
    processes: int | None = None
    parallelism: int | None = None
    settings: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, runs: list[dict[str, Any]], data: Dataset) -> SystemFigures:
        def per_million(run: dict[str, Any]) -> float:
            return run["cpu_s"] / data.records * 1e6 if run["complete"] else math.nan

        return cls(
            runs=runs,
            **summaries(runs, "seconds", "records_per_s", "cpu_s", "startup_s"),
            mb_per_s=Summary.of([r["records_per_s"] * data.mean_bytes / 1e6 for r in runs]),
            records_per_s_with_startup=Summary.of(
                [data.records / (r["startup_s"] + r["seconds"]) for r in runs]
            ),
            cpu_s_per_million=Summary.of([per_million(r) for r in runs]),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class CeilingFigures:
    """Consume + decode only: its runs and their summaries."""

    runs: list[dict[str, Any]] = field(default_factory=list)
    records_per_s: Summary = field(default_factory=Summary)
    mb_per_s: Summary = field(default_factory=Summary)
    records_per_cpu_s: Summary = field(default_factory=Summary)

    @classmethod
    def of(cls, runs: list[dict[str, Any]]) -> CeilingFigures:
        return cls(runs=runs, **summaries(runs, "records_per_s", "mb_per_s", "records_per_cpu_s"))


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryFigures:
    """Experiment 5: peak MiB per run of Redis and of the largest mapper and reducer, and
    of each peer for comparison."""

    redis_peak_mb: Summary = field(default_factory=Summary)
    mapper_peak_rss_mb: Summary = field(default_factory=Summary)
    reducer_peak_rss_mb: Summary = field(default_factory=Summary)
    spark_peak_rss_mb: Summary = field(default_factory=Summary)
    quix_peak_rss_mb: Summary | None = None
    flink_peak_rss_mb: Summary | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class EndToEndResult:
    """Experiment 3 (and 5): every system over the same topic. A peer is None in results
    written before it was measured; `dataset`: the topic, for the steady-state run."""

    mappers: int = 0
    reducers: int = 0
    mars: SystemFigures = field(default_factory=SystemFigures)
    spark: SystemFigures = field(default_factory=SystemFigures)
    quix: SystemFigures | None = None
    flink: SystemFigures | None = None
    ceiling: CeilingFigures | None = None
    ceiling_native: CeilingFigures | None = None
    memory: MemoryFigures = field(default_factory=MemoryFigures)
    notes: list[str] = field(default_factory=list)
    dataset: dict[str, Any] | None = None


def peak(runs: list[dict[str, Any]], name: str) -> Summary:
    """The largest process's peak `name` per run (a list of per-process peaks each)."""
    return Summary.of([max(x for x in r[name] if x is not None) for r in runs])

"""Experiment 8's pure parts: one pull query's answer, a batch of answers summed up, what the
system did between two snapshots (a phase), and what one query cost on top of the phase
without queries."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from prometheus_client.parser import text_string_to_metric_families

from benchmarks.stats import median, percentile, ratio

COMMIT_METRIC = "mars_reducer_commit_duration_seconds"


@dataclass(frozen=True, slots=True, kw_only=True)
class Answer:
    """One pull query through HTTP: its wall time until the whole body arrived, the body's
    size, the open-window rows it held and the staleness the API reported."""

    latency_s: float
    body_bytes: int
    rows: int
    staleness_ms: int | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Snapshot:
    """Cumulative figures read at monotonic time `t`: the task's exact `records_in`, CPU
    seconds of the API and of the mappers + reducers, Redis `total_net_output_bytes`, and the
    reducers' commit-duration histogram for the task (sum of seconds, count, and the count of
    commits at most `le` seconds per bucket bound `le`)."""

    t: float
    records_in: int
    api_cpu_s: float
    pipeline_cpu_s: float
    redis_out_bytes: int
    commit_s: float
    commits: int
    commit_buckets: Mapping[float, int] = field(default_factory=dict)


def answers_summary(answers: Sequence[Answer], *, seconds: float) -> dict[str, float]:
    """Latency percentiles (ms), the median body and rows, staleness (ms) and the rate the
    answers came at over `seconds`."""
    latencies_ms = [a.latency_s * 1000 for a in answers]
    staleness = [float(a.staleness_ms) for a in answers if a.staleness_ms is not None]
    return {
        "queries": len(answers),
        "queries_per_s": ratio(len(answers), seconds),
        "p50_ms": percentile(latencies_ms, 50),
        "p99_ms": percentile(latencies_ms, 99),
        "max_ms": max(latencies_ms, default=math.nan),
        "body_bytes": median([float(a.body_bytes) for a in answers]),
        "rows": median([float(a.rows) for a in answers]),
        "staleness_p50_ms": percentile(staleness, 50),
        "staleness_max_ms": max(staleness, default=math.nan),
        "unknown_staleness": sum(1 for a in answers if a.staleness_ms is None),
    }


def phase_figures(before: Snapshot, after: Snapshot) -> dict[str, float]:
    """What happened between two snapshots, as rates over the phase's wall time."""
    seconds = after.t - before.t
    commits = after.commits - before.commits
    return {
        "seconds": seconds,
        "records_per_s": ratio(after.records_in - before.records_in, seconds),
        "commits": commits,
        "commit_mean_ms": ratio((after.commit_s - before.commit_s) * 1000, commits),
        **{
            f"commit_p{q}_ms_at_most": bucket_quantile(
                {
                    le: n - before.commit_buckets.get(le, 0)
                    for le, n in after.commit_buckets.items()
                },
                q,
            )
            * 1000
            for q in (50, 99)
        },
        "pipeline_cpu_per_s": ratio(after.pipeline_cpu_s - before.pipeline_cpu_s, seconds),
        "api_cpu_per_s": ratio(after.api_cpu_s - before.api_cpu_s, seconds),
        "redis_out_bytes_per_s": ratio(after.redis_out_bytes - before.redis_out_bytes, seconds),
    }


def per_query_cost(
    phase: dict[str, float], idle: dict[str, float], *, queries: int
) -> dict[str, float]:
    """API CPU milliseconds and Redis output bytes one query added: the phase's figure minus
    the same rate without queries (`idle`) over the phase's time, over its queries."""
    seconds = phase["seconds"]

    def added(name: str) -> float:
        return ratio((phase[name] - idle[name]) * seconds, queries)

    return {
        "api_cpu_ms_per_query": added("api_cpu_per_s") * 1000,
        "redis_out_bytes_per_query": added("redis_out_bytes_per_s"),
    }


def commit_totals(metrics_text: str, task: str) -> tuple[float, int, dict[float, int]]:
    """(seconds, count, cumulative count per bucket bound) of the task's reducer commits
    from one process's Prometheus text."""
    seconds, count, buckets = 0.0, 0, {}
    for family in text_string_to_metric_families(metrics_text):
        if family.name != COMMIT_METRIC:
            continue
        for sample in family.samples:
            if sample.labels.get("task") != task:
                continue
            if sample.name == COMMIT_METRIC + "_sum":
                seconds += sample.value
            elif sample.name == COMMIT_METRIC + "_count":
                count += int(sample.value)
            elif sample.name == COMMIT_METRIC + "_bucket":
                buckets[float(sample.labels["le"])] = int(sample.value)
    return seconds, count, buckets


def bucket_quantile(buckets: Mapping[float, int], q: float) -> float:
    """The smallest bucket bound that at least `q` % of the observations are at most, from
    cumulative counts per bound (`inf` for the +Inf bucket; NaN for no observations)."""
    ordered = sorted(buckets.items())
    total = ordered[-1][1] if ordered else 0
    if total <= 0:
        return math.nan
    return next(le for le, n in ordered if n >= total * q / 100)


def impact(phases: Mapping[str, Mapping[str, float]], phase: str) -> dict[str, float]:
    """A query phase's records/s, mean commit and pipeline CPU over the phase without
    queries (1.0: no change)."""
    base, other = phases["no_queries"], phases[phase]
    return {
        name: ratio(other[name], base[name])
        for name in ("records_per_s", "commit_mean_ms", "pipeline_cpu_per_s")
    }

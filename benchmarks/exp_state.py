"""Experiment 7 (issue 11, bounded state): does memory grow with the window length?

The same live traffic (event time = wall clock, a fixed rate, `sips` x 8 types groups, so a
window holds every group within its first seconds) into one fresh task per window length
(1 min, 10 min, 1 h): `SELECT sip, type, count(*) ... GROUP BY sip, type WINDOWING <len>`,
each with its own 2 mappers + 1 reducer (`exp_latency.live_task`, the live generator of
experiment 4). While the traffic flows, Redis `used_memory` and the reducer's VmRSS are
sampled every 100 ms (`RedisMemorySampler`). A run of a few minutes closes 1 min windows and
(unless a window end happens to fall inside the run: the windows emitted are counted) no
10 min or 1 h window. Bounded state gives the same figures for every length; state kept until
its window closes grows for as long as the run lasts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from benchmarks.exp_latency import live_task
from benchmarks.harness import BenchCluster
from benchmarks.procstat import rss_mb
from benchmarks.state_figures import (
    growth,
    per_second,
    run_figures,
    summarize_windows,
    window_label,
)
from benchmarks.workload import csv_options
from devtools.gen.fields import TYPES


def state_sql(topic: str, *, window_s: int) -> str:
    """Count per (sip, type) and tumbling window of `window_s` over CSV tuples."""
    return (
        f"SELECT sip, type, count(*) FROM {topic} GROUP BY sip, type "
        f"WINDOWING {window_s} s {csv_options(idle='60 s')}"
    )


def state_run(
    bench: BenchCluster,
    *,
    window_s: int,
    rate: float,
    duration_s: int,
    sips: int,
    mappers: int,
    reducers: int,
) -> dict[str, Any]:
    """One window length: fresh task and processes, `duration_s` of traffic, memory sampled."""
    with live_task(
        bench,
        window_s=window_s,
        mappers=mappers,
        reducers=reducers,
        prefix="state",
        query=lambda topic: state_sql(topic, window_s=window_s),
    ) as live:
        pids = [handle.pid for handle in live.run.reducers]
        redis_idle_mb = bench.redis_memory()["used_memory_mb"]
        reducer_idle_mb = sum(rss_mb(pid) or 0.0 for pid in pids)
        with bench.redis_sampler(pids=pids) as sampler:
            live.send(rate=rate, duration_s=duration_s, sips=sips)
        figures = live.run.figures()["reducers"]
        records_in = live.run.stats().get("records_in", 0)
    peaks = [f.peak_rss_mb for f in figures]
    return {
        "window_s": window_s,
        "produced": int(rate * duration_s),
        "records_in": records_in,
        "windows_emitted": len(live.reader.snapshot()),
        "redis_idle_mb": redis_idle_mb,
        "reducer_idle_rss_mb": reducer_idle_mb,
        **run_figures(
            sampler.samples,
            redis_idle_mb=redis_idle_mb,
            reducer_peak_rss_mb=None if None in peaks else sum(p or 0.0 for p in peaks),
        ),
        "series": per_second(sampler.samples),
    }


def state_experiment(
    bench: BenchCluster,
    *,
    windows_s: Sequence[int],
    rate: float,
    duration_s: int,
    sips: int,
    runs: int,
    mappers: int,
    reducers: int,
    warmup_s: int = 10,
    log: Any = print,
) -> dict[str, Any]:
    """Every window length once per run, interleaved, so the machine's load hits all alike.

    First an unmeasured `warmup_s` run: a Redis that served no task yet grows by about
    0.5 MiB of its own (script cache, clients, allocations it keeps) during its first task,
    which would otherwise count as the first window length's state."""
    state_run(
        bench,
        window_s=windows_s[0],
        rate=rate,
        duration_s=warmup_s,
        sips=sips,
        mappers=mappers,
        reducers=reducers,
    )
    found: dict[int, list[dict[str, Any]]] = {window_s: [] for window_s in windows_s}
    for index in range(runs):
        for window_s in windows_s:
            run = state_run(
                bench,
                window_s=window_s,
                rate=rate,
                duration_s=duration_s,
                sips=sips,
                mappers=mappers,
                reducers=reducers,
            )
            found[window_s].append(run)
            log(
                f"  state {window_label(window_s)} run {index + 1}: Redis +"
                f"{run['redis_state_peak_mb']:.1f} MiB peak, reducer "
                f"{run['reducer_peak_rss_mb']:.0f} MiB peak RSS, "
                f"{run['records_in']:,} of {run['produced']:,} records in, "
                f"{run['windows_emitted']} windows emitted"
            )
    by_window = summarize_windows(found)
    return {
        "rate": rate,
        "duration_s": duration_s,
        "sips": sips,
        "groups": sips * len(TYPES),
        "mappers": mappers,
        "reducers": reducers,
        "windows_s": list(windows_s),
        "warmup_s": warmup_s,
        "by_window": by_window,
        "growth": growth(by_window),
    }

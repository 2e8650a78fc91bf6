"""Experiment 7 (bounded state): does memory grow with the window length?

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

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from benchmarks.exp_latency import live_task
from benchmarks.experiment import Base, Context, Section, render
from benchmarks.procstat import rss_mb
from benchmarks.report_format import fmt, image, med
from benchmarks.state_figures import (
    STATE_WINDOWS_S,
    StateRun,
    WindowFigures,
    growth,
    per_second,
    run_figures,
    summarize_windows,
    window_label,
)
from benchmarks.targets import STATE_GROWTH_TARGET
from benchmarks.workload import csv_options
from devtools.gen.fields import TYPES


@dataclass(frozen=True, slots=True)
class StateSettings:
    windows_s: tuple[int, ...] = STATE_WINDOWS_S
    rate: float = 4000.0
    sips: int = 250  # x 8 types: 2,000 groups, every one in a window's first seconds
    duration_s: int = 180
    runs: int = 1  # unless --runs says otherwise: the 3 lengths x 180 s take 10 min
    QUICK: ClassVar[dict[str, object]] = {"duration_s": 30}


@dataclass(frozen=True, slots=True, kw_only=True)
class StateResult:
    """Experiment 7: the traffic, the processes and each window length's figures
    (`by_window`, keyed by the length in seconds) with the longest's over the shortest's."""

    rate: float = math.nan
    duration_s: int = 0
    sips: int = 0
    groups: int = 0
    mappers: int = 0
    reducers: int = 0
    windows_s: list[int] = field(default_factory=list)
    warmup_s: int = 0
    by_window: dict[str, WindowFigures] = field(default_factory=dict)
    growth: dict[str, float] = field(default_factory=dict)


class State(Base[StateSettings, StateResult]):
    """Experiment 7 (the module's docstring)."""

    name = "state"
    title = "experiment 7, Redis and reducer memory vs window length (bounded state)"
    sections = (Section(7, "## 7. Memory vs window length (bounded state)"),)
    settings_type = StateSettings
    result_type = StateResult

    def run(self, ctx: Context, settings: StateSettings) -> StateResult:
        return state_experiment(ctx, settings)

    def report(self, result: StateResult | None, images: Mapping[str, str]) -> tuple[str, ...]:
        if not result:
            return self.not_run()
        by_window = result.by_window
        found = growth(by_window)
        short, long = window_label(found["shortest_s"]), window_label(found["longest_s"])
        count = max((len(row.runs) for row in by_window.values()), default=0)
        rows = [
            f"| {window_label(int(window_s))} | {med(row.redis_state_peak_mb, '.1f')} "
            f"| {med(row.redis_state_steady_mb, '.1f')} "
            f"| {med(row.reducer_peak_rss_mb)} | {med(row.reducer_steady_rss_mb)} "
            f"| {', '.join(str(r.windows_emitted) for r in row.runs)} "
            f"| {', '.join(fmt(r.records_in) for r in row.runs)} |"
            for window_s, row in by_window.items()
        ]
        too_short = result.duration_s < 2 * found["shortest_s"]
        values: dict[str, object] = {
            "lengths": ", ".join(window_label(int(w)) for w in by_window),
            "count": count,
            "runs": "run" if count == 1 else "runs",
            "rate": fmt(result.rate),
            "records": fmt(result.rate * result.duration_s),
            "groups": fmt(result.groups),
            "types": result.groups // result.sips,
            "warmup_s": result.warmup_s,
            "duration_s": result.duration_s,
            "sips": result.sips,
            "mappers": result.mappers,
            "reducers": result.reducers,
            "short": short,
            "long": long,
            "target": STATE_GROWTH_TARGET,
            "rows": "\n".join(rows),
            "growth": " | ".join(
                f"{fmt(found[name], '.2f')}x"
                for name in (
                    "redis_state_peak_mb",
                    "redis_state_steady_mb",
                    "reducer_peak_rss_mb",
                    "reducer_steady_rss_mb",
                )
            ),
            "redis_idle": _span(by_window, "redis_idle_mb", ".1f"),
            "reducer_idle": _span(by_window, "reducer_idle_rss_mb", ".0f"),
            "image": image(images, "state", "memory over time per window length"),
        }
        too_short_text = render("state_too_short", **values) if too_short else ""
        return (render("state", too_short=too_short_text, **values),)


def _span(by_window: Mapping[str, WindowFigures], name: str, spec: str) -> str:
    """`low–high` of a figure's medians over the window lengths (one value when equal)."""
    values = [getattr(row, name).median for row in by_window.values()]
    low, high = fmt(min(values, default=math.nan), spec), fmt(max(values, default=math.nan), spec)
    return low if low == high else f"{low}–{high}"


def state_sql(topic: str, *, window_s: int) -> str:
    """Count per (sip, type) and tumbling window of `window_s` over CSV tuples."""
    return (
        f"SELECT sip, type, count(*) FROM {topic} GROUP BY sip, type "
        f"WINDOWING {window_s} s {csv_options(idle='60 s')}"
    )


def state_run(ctx: Context, settings: StateSettings, *, window_s: int, duration_s: int) -> StateRun:
    """One window length: fresh task and processes, `duration_s` of traffic, memory sampled."""
    bench, rate = ctx.bench, settings.rate
    with live_task(
        bench,
        window_s=window_s,
        mappers=ctx.config.mappers,
        reducers=ctx.config.reducers,
        prefix="state",
        query=lambda topic: state_sql(topic, window_s=window_s),
    ) as live:
        pids = [handle.pid for handle in live.run.reducers]
        redis_idle_mb = bench.redis_memory()["used_memory_mb"]
        reducer_idle_mb = sum(rss_mb(pid) or 0.0 for pid in pids)
        with bench.redis_sampler(pids=pids) as sampler:
            live.send(rate=rate, duration_s=duration_s, sips=settings.sips)
        figures = live.run.figures()["reducers"]
        records_in = live.run.stats().get("records_in", 0)
    peaks = [f.peak_rss_mb for f in figures]
    return StateRun(
        window_s=window_s,
        produced=int(rate * duration_s),
        records_in=records_in,
        windows_emitted=len(live.reader.snapshot()),
        redis_idle_mb=redis_idle_mb,
        reducer_idle_rss_mb=reducer_idle_mb,
        **run_figures(
            sampler.samples,
            redis_idle_mb=redis_idle_mb,
            reducer_peak_rss_mb=None if None in peaks else sum(p or 0.0 for p in peaks),
        ),
        series=per_second(sampler.samples),
    )


def state_experiment(ctx: Context, settings: StateSettings, *, warmup_s: int = 10) -> StateResult:
    """Every window length once per run, interleaved, so the machine's load hits all alike.

    First an unmeasured `warmup_s` run: a Redis that served no task yet grows by about
    0.5 MiB of its own (script cache, clients, allocations it keeps) during its first task,
    which would otherwise count as the first window length's state."""
    windows_s, duration_s = settings.windows_s, settings.duration_s
    state_run(ctx, settings, window_s=windows_s[0], duration_s=warmup_s)
    found: dict[int, list[StateRun]] = {window_s: [] for window_s in windows_s}
    for index in range(settings.runs):
        for window_s in windows_s:
            run = state_run(ctx, settings, window_s=window_s, duration_s=duration_s)
            found[window_s].append(run)
            ctx.log(
                f"  state {window_label(window_s)} run {index + 1}: Redis +"
                f"{run.redis_state_peak_mb:.1f} MiB peak, reducer "
                f"{run.reducer_peak_rss_mb:.0f} MiB peak RSS, "
                f"{run.records_in:,} of {run.produced:,} records in, "
                f"{run.windows_emitted} windows emitted"
            )
    by_window = summarize_windows(found)
    return StateResult(
        rate=settings.rate,
        duration_s=duration_s,
        sips=settings.sips,
        groups=settings.sips * len(TYPES),
        mappers=ctx.config.mappers,
        reducers=ctx.config.reducers,
        windows_s=list(windows_s),
        warmup_s=warmup_s,
        by_window=by_window,
        growth=growth(by_window),
    )

"""Section 8 of `docs/benchmarks.md`: pull queries (experiment 8), from its results."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from benchmarks.experiment import render
from benchmarks.report_format import fmt
from benchmarks.state_figures import window_label

if TYPE_CHECKING:  # the experiment's module imports this one
    from benchmarks.exp_pull_query import PullResult, PullRun

PULL_HEADING = "## 8. Pull queries: latency and cost under live traffic"
QUERY_LABELS = {"one_group": "one group", "whole_window": "whole open window"}


def size(value: Any) -> str:
    """Bytes for people: `812 B`, `35.2 KiB`, `3.10 MiB`; `—` when missing."""
    if not isinstance(value, int | float) or math.isnan(value):
        return "—"
    if value < 1024:
        return f"{value:,.0f} B"
    if value < 1024**2:
        return f"{value / 1024:,.1f} KiB"
    return f"{value / 1024**2:,.2f} MiB"


def _times(value: Any) -> str:
    """` (1.05x)`, nothing when the ratio is missing."""
    return f" ({fmt(value, '.2f')}x)" if fmt(value) != "—" else ""


def pull_section(pull: PullResult) -> str:
    sizes = pull.by_groups
    return render(
        "pull",
        rate=fmt(pull.rate),
        window=window_label(pull.window_s),
        mappers=pull.mappers,
        reducers=pull.reducers,
        baseline_s=fmt(pull.baseline_s),
        queries=pull.queries,
        query_rate=fmt(pull.query_rate),
        whole_cap_s=fmt(pull.whole_cap_s),
        query_rows="\n".join(
            _query_row(groups, QUERY_LABELS[name], found)
            for groups, run in sizes.items()
            for name, found in run.queries.items()
        ),
        phase_rows="\n".join(
            line for groups, run in sizes.items() for line in _phase_rows(groups, run, pull)
        ),
    )


def _query_row(groups: str, label: str, found: Mapping[str, float]) -> str:
    return (
        f"| {fmt(int(groups))} | {label} | {found['queries']} "
        f"({fmt(found['queries_per_s'], '.1f')}) | {fmt(found['p50_ms'], '.1f')} ms "
        f"| {fmt(found['p99_ms'], '.1f')} ms | {fmt(found['max_ms'], '.1f')} ms "
        f"| {fmt(found['rows'])} | {size(found['body_bytes'])} "
        f"| {fmt(found['staleness_p50_ms'])} / {fmt(found['staleness_max_ms'])} ms "
        f"| {fmt(found['api_cpu_ms_per_query'], '.1f')} ms "
        f"| {size(found['checkpoint_bytes'])} | {size(found['redis_out_bytes_per_query'])} |"
    )


def _phase_rows(groups: str, run: PullRun, pull: PullResult) -> list[str]:
    def label(name: str) -> str:
        if name not in QUERY_LABELS:
            return "no queries"
        achieved = run.queries[name]["queries_per_s"]
        return f"{QUERY_LABELS[name]}, {fmt(achieved, '.1f')}/s (paced at {fmt(pull.query_rate)})"

    rows = []
    for name, phase in run.phases.items():
        change = run.impact.get(name, {})
        rows.append(
            f"| {fmt(int(groups))} | {label(name)} "
            f"| {fmt(phase['records_per_s'])}{_times(change.get('records_per_s'))} "
            f"| {fmt(phase['commits'])} "
            f"| {fmt(phase['commit_mean_ms'], '.1f')} ms"
            f"{_times(change.get('commit_mean_ms'))} "
            f"| {fmt(phase.get('commit_p50_ms_at_most'))} / "
            f"{fmt(phase.get('commit_p99_ms_at_most'))} ms "
            f"| {fmt(phase['pipeline_cpu_per_s'], '.2f')}"
            f"{_times(change.get('pipeline_cpu_per_s'))} "
            f"| {fmt(phase['api_cpu_per_s'], '.2f')} |"
        )
    return rows

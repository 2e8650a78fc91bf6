"""Section 8 of `docs/benchmarks.md`: pull queries (experiment 8), from its results dict."""

from __future__ import annotations

import math
from typing import Any

from benchmarks.report_format import fmt
from benchmarks.state_figures import window_label

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


def pull_section(pull: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    sizes = pull["by_groups"]
    return [
        *lines,
        f"`GET /tasks/{{id}}/windows` through real HTTP (one kept-alive connection from the "
        f"benchmark's process) while {fmt(pull['rate'])} records/s of live traffic (event "
        "time = wall clock) flow into `SELECT sip, type, count(*) FROM <topic> GROUP BY sip, "
        f"type WINDOWING {window_label(pull['window_s'])}`, so the window stays open; "
        f"{pull['mappers']} mappers + {pull['reducers']} reducer + `mars api`, fresh for each "
        "state size, one run each. After a warm-up that fills the open window with (nearly) "
        f"every group: {fmt(pull['baseline_s'])} s without queries, then {pull['queries']} "
        "queries of one group (`group.sip=..&group.type=..&window_start=..`, a random group "
        f"of the window each) paced at {fmt(pull['query_rate'])} per second, then up to "
        f"{pull['queries']} queries of the whole open window (`window_start=..` only) at the "
        f"same pace for at most {fmt(pull['whole_cap_s'])} s (a large window answers slower "
        "than the pace). "
        "Latency: from sending the request until the whole body arrived. Staleness: the "
        "API's `staleness_ms` (answer time minus `as_of_ms`). API CPU and Redis bytes out "
        "per query: the phase's figure (API process CPU seconds from /proc, Redis "
        "`total_net_output_bytes`) minus the same rate in the phase without queries, over "
        "its queries. Checkpoints read: the size of the units' committed checkpoints a "
        "query covers; the API decodes a unit's checkpoint again only when its owner has "
        "committed a newer one (`api.pull_queries.DecodedCheckpoints`).",
        "",
        "| groups | query | queries (per s) | p50 | p99 | max | rows | response "
        "| staleness p50 / max | API CPU per query | checkpoints read | Redis bytes out "
        "per query |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        *[
            _query_row(groups, QUERY_LABELS[name], found)
            for groups, run in sizes.items()
            for name, found in run["queries"].items()
        ],
        "",
        "The pipeline in each phase (the traffic is paced, so records/s stays at the offered "
        "rate as long as the pipeline keeps up; a slowdown shows as fewer records/s or longer "
        "commits). Reducer commits: its Kafka transactions for the task "
        "(`mars_reducer_commit_duration_seconds`); the mean counts every commit, one slow "
        "commit included; p50 / p99: the histogram's bucket bounds that half and 99 % of the "
        "phase's commits took at most. CPU: seconds per second of wall time. In brackets: the "
        "ratio to the phase without queries.",
        "",
        "| groups | phase | records/s | reducer commits | mean commit | commit p50 / p99 at "
        "most | mappers + reducer CPU | API CPU |",
        "|---:|---|---:|---:|---:|---:|---:|---:|",
        *[
            line
            for groups, run in sizes.items()
            for line in _phase_rows(groups, run, pull["query_rate"])
        ],
        "",
    ]


def _query_row(groups: str, label: str, found: dict[str, Any]) -> str:
    return (
        f"| {fmt(int(groups))} | {label} | {found['queries']} "
        f"({fmt(found['queries_per_s'], '.1f')}) | {fmt(found['p50_ms'], '.1f')} ms "
        f"| {fmt(found['p99_ms'], '.1f')} ms | {fmt(found['max_ms'], '.1f')} ms "
        f"| {fmt(found['rows'])} | {size(found['body_bytes'])} "
        f"| {fmt(found['staleness_p50_ms'])} / {fmt(found['staleness_max_ms'])} ms "
        f"| {fmt(found['api_cpu_ms_per_query'], '.1f')} ms "
        f"| {size(found['checkpoint_bytes'])} | {size(found['redis_out_bytes_per_query'])} |"
    )


def _phase_rows(groups: str, run: dict[str, Any], query_rate: float) -> list[str]:
    def label(name: str) -> str:
        if name not in QUERY_LABELS:
            return "no queries"
        achieved = run["queries"][name]["queries_per_s"]
        return f"{QUERY_LABELS[name]}, {fmt(achieved, '.1f')}/s (paced at {fmt(query_rate)})"

    rows = []
    for name, phase in run["phases"].items():
        change = run["impact"].get(name, {})
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

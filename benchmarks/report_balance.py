"""Section 9 of `docs/benchmarks.md`: load moves under skew (experiment 9), from its results."""

from __future__ import annotations

import math
from typing import Any

from benchmarks.balance_figures import salting_pays
from benchmarks.report_format import fmt
from benchmarks.stats import ratio

BALANCE_HEADING = "## 9. Load moves under skew: throughput and latency with and without them"
VARIANT_LABELS = {"unbalanced": "placement by unit count (moves off)", "balanced": "load moves on"}
REDUCER_BOUND = 0.5  # a reducer busier than this share of a core may limit the pipeline
PHASE_LABELS = {"throughput": "throughput, 2nd half", "latency": "paced, measured part"}


def balance_section(balance: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    variants, ratios = balance["variants"], balance["ratios"]
    data = balance["dataset"]
    rate = variants["unbalanced"]["latency"]["rate"]
    settings = ", ".join(
        f"`{name.removeprefix('MARS_BALANCE__').lower()}` {value}"
        for name, value in variants["balanced"]["env"].items()
        if name != "MARS_BALANCE__ENABLED"
    )
    return [
        *lines,
        "Four tasks over one Zipf-skewed stream (every field Zipf with exponent "
        f"{fmt(balance['zipf_s'], '.1f')}, the workload of "
        "`tests/integration/test_load_balancing.py`): `count(*)` GROUP BY (sip, type), sip "
        f"(with `sum(bytes)`), dport and type, {balance['buckets']} buckets each, so "
        f"{4 * balance['buckets']} units of very different cost. {balance['mappers']} mappers "
        f"+ {balance['reducers']} reducers, fresh for each variant (own ZooKeeper root), same "
        "data: first with load moves off (`MARS_BALANCE__ENABLED=false`: consistent hashing, "
        "unit counts evened out; where the units land depends on the task ids, fresh per "
        f"phase), then on ({settings}, so they settle within the run; the leader's pressure "
        "relief, docs/reducer.md, is on with them). In each "
        f"variant: (1) throughput: the four tasks ({balance['throughput_window_s']} s windows) "
        f"over {fmt(data['records'])} preloaded skewed CSV tuples ({fmt(data['mbytes'], '.1f')} "
        f"MB, event time over {data['span_s']} s, a sentinel per partition closing every "
        "window), from registering them until every data window of every task is readable "
        "(read_committed), as experiment 3 for one task; (2) four fresh tasks "
        f"({balance['window_s']} s windows) over a fresh topic fed paced skewed traffic at "
        f"{fmt(rate)} records/s (half the unbalanced throughput, the same in both variants; "
        f"event time = wall clock): {balance['settle_s']} s for the moves to settle, then "
        f"{balance['measure_s']} s whose windows are measured as in experiment 4 (last result "
        "row readable minus the watermark passing the window's end), every task's windows "
        "together. Once a second the benchmark reads the assignment and every unit's published "
        "load (partial groups merged per second, smoothed): a reducer's load is the sum of its "
        "units'; the figures below are medians over those looks.",
        "",
        "| variant | records/s | seconds | reducer CPU s, busiest / idlest | mapper CPU s "
        "| paced p50 | paced p99 | max | windows |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        *[_result_row(name, variants[name]) for name in VARIANT_LABELS if name in variants],
        f"| **on / off** | {fmt(ratios['records_per_s'], '.2f')}x | | | "
        f"| {fmt(ratios['p50_s'], '.2f')}x | {fmt(ratios['p99_s'], '.2f')}x | | |",
        "",
        "Placement: reducer loads (partial groups merged per second), max over min, their "
        "spread (standard deviation over mean, the leader's threshold is "
        "`imbalance_threshold`), the largest unit against the mean unit and against a "
        "reducer's fair share (total load over the reducers), the units placed by load at the "
        "end and how often the assignment changed while measured.",
        "",
        "| variant | phase | reducer load max / min | max / min | spread | largest unit / mean "
        "unit | largest unit / fair share | units placed by load | assignment changes |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
        *[
            _placement_row(name, phase, variants[name][phase]["placement"])
            for name in VARIANT_LABELS
            if name in variants
            for phase in PHASE_LABELS
        ],
        "",
        *_moves_lines(variants.get("balanced"), settle_s=balance["settle_s"]),
        *_limit_lines(variants),
        *_task_lines(variants["unbalanced"]["latency"]["placement"]),
        *_salting_lines(variants["balanced"]["latency"]["placement"]),
    ]


def _result_row(name: str, variant: dict[str, Any]) -> str:
    throughput, latency = variant["throughput"], variant["latency"]
    cpu = throughput["reducer_cpu_s"]
    return (
        f"| {VARIANT_LABELS[name]} | {fmt(throughput['records_per_s'])} "
        f"| {fmt(throughput['seconds'], '.1f')} "
        f"| {fmt(max(cpu, default=None), '.1f')} / {fmt(min(cpu, default=None), '.1f')} "
        f"| {fmt(throughput['mapper_cpu_s'], '.1f')} | {fmt(latency['p50_s'], '.3f')} s "
        f"| {fmt(latency['p99_s'], '.3f')} s | {fmt(latency['max_s'], '.3f')} s "
        f"| {latency['windows']} |"
    )


def _placement_row(name: str, phase: str, placement: dict[str, Any]) -> str:
    if not placement.get("looks"):
        return f"| {VARIANT_LABELS[name]} | {PHASE_LABELS[phase]} | no complete look | | | | | | |"
    return (
        f"| {VARIANT_LABELS[name]} | {PHASE_LABELS[phase]} "
        f"| {fmt(placement['reducer_load_max'])} / {fmt(placement['reducer_load_min'])} "
        f"| {fmt(placement['max_over_min'], '.2f')} | {fmt(placement['imbalance'], '.2f')} "
        f"| {fmt(placement['largest_over_mean'], '.1f')}x "
        f"| {fmt(placement['largest_over_fair_share'], '.2f')} "
        f"| {placement['moves_at_end']} | {placement['assignment_changes']} |"
    )


def _moves_lines(balanced: dict[str, Any] | None, *, settle_s: int) -> list[str]:
    if not balanced:
        return []

    def when(times: list[float]) -> str:
        if not times:
            return "never"
        shown = ", ".join(fmt(t, ".0f") for t in times[:8])
        return f"{shown}{', ...' if len(times) > 8 else ''} s"

    return [
        "With load moves on, the units placed by load changed at "
        f"{when(balanced['throughput']['move_times_s'])} after registering the throughput "
        f"tasks, and at {when(balanced['latency']['move_times_s'])} after the paced traffic "
        f"started (measured from {settle_s} s on; the looks are a second apart, so moves in "
        "the same second show as one).",
        "",
    ]


def _limit_lines(variants: dict[str, Any]) -> list[str]:
    """What the CPU figures of the throughput runs say limits this workload here."""
    shares = {
        name: (
            max(variant["throughput"]["reducer_cpu_s"], default=math.nan),
            variant["throughput"]["mapper_cpu_s"],
            variant["throughput"]["seconds"],
        )
        for name, variant in variants.items()
    }
    busiest = max((ratio(cpu, seconds) for cpu, _, seconds in shares.values()), default=math.nan)
    if math.isnan(busiest):
        return []
    figures = "; ".join(
        f"{VARIANT_LABELS[name]}: the busiest reducer {fmt(ratio(cpu, seconds), '.0%')} of a "
        f"core, the mappers {fmt(ratio(mappers, seconds), '.2f')} cores"
        for name, (cpu, mappers, seconds) in shares.items()
    )
    verdict = (
        "no reducer was near a core's worth of work, so the reducers did not limit this "
        "workload here and evening their loads could not raise its throughput on this machine"
        if busiest < REDUCER_BOUND
        else "a reducer used most of a core, so the busiest reducer can limit this workload"
    )
    return [f"CPU during the throughput runs ({figures}): {verdict}.", ""]


def _task_lines(placement: dict[str, Any]) -> list[str]:
    by_task = placement.get("by_task") or {}
    if not by_task:
        return []
    return [
        "What each task's units cost (paced traffic, moves off; partial groups merged per "
        "second per unit; mappers pre-aggregate, so each unit costs about its distinct groups "
        "per batch, whatever the records per group):",
        "",
        "| task | units | largest unit | mean unit | task total |",
        "|---|---:|---:|---:|---:|",
        *[
            f"| GROUP BY {label} | {fmt(found['units'])} | {fmt(found['load_max'], ',.1f')} "
            f"| {fmt(found['load_mean'], ',.1f')} | {fmt(found['load_total'], ',.1f')} |"
            for label, found in by_task.items()
        ],
        "",
    ]


def _salting_lines(placement: dict[str, Any]) -> list[str]:
    share = placement.get("largest_over_fair_share", float("nan"))
    verdict = salting_pays(share)
    if verdict is None:
        return []
    figures = (
        f"With moves on, the largest unit carries {fmt(share, '.2f')} of a reducer's fair "
        f"share ({fmt(placement['largest_over_mean'], '.1f')}x the mean unit)"
    )
    if verdict:
        conclusion = (
            "one unit alone is more than a reducer's share, so no placement of whole units "
            "evens the reducers: splitting that unit's groups over more buckets could pay, "
            "but salting a single hot key would not by itself (a key is one partial group per "
            "batch however hot, salted over k buckets it is k)."
        )
    else:
        conclusion = (
            "every unit is smaller than a reducer's share, so moving whole units can even the "
            "reducers and salting a hot key over several buckets would not pay: mappers "
            "pre-aggregate, so the hottest key costs its unit one partial group per batch, and "
            "salting it over k buckets would make k partial groups per batch, more reducer "
            "work, not less."
        )
    return [f"**Salting a hot key?** {figures}: {conclusion}", ""]

"""Section 9 of `docs/benchmarks.md`: load moves under skew (experiment 9), from its results."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from benchmarks.balance_figures import Variant, salting_pays
from benchmarks.experiment import render
from benchmarks.report_format import fmt
from benchmarks.stats import ratio

if TYPE_CHECKING:  # the experiment's module imports this one
    from benchmarks.exp_balance import BalanceResult

BALANCE_HEADING = "## 9. Load moves under skew: throughput and latency with and without them"
VARIANT_LABELS = {"unbalanced": "placement by unit count (moves off)", "balanced": "load moves on"}
REDUCER_BOUND = 0.5  # a reducer busier than this share of a core may limit the pipeline
PHASE_LABELS = {"throughput": "throughput, 2nd half", "latency": "paced, measured part"}


def balance_section(balance: BalanceResult) -> str:
    variants, ratios, data = balance.variants, balance.ratios, balance.dataset
    shown = [name for name in VARIANT_LABELS if name in variants]
    return render(
        "balance",
        zipf_s=fmt(balance.zipf_s, ".1f"),
        buckets=balance.buckets,
        units=4 * balance.buckets,
        mappers=balance.mappers,
        reducers=balance.reducers,
        settings=", ".join(
            f"`{name.removeprefix('MARS_BALANCE__').lower()}` {value}"
            for name, value in variants["balanced"].env.items()
            if name != "MARS_BALANCE__ENABLED"
        ),
        throughput_window_s=balance.throughput_window_s,
        records=fmt(data["records"]),
        mbytes=fmt(data["mbytes"], ".1f"),
        span_s=data["span_s"],
        window_s=balance.window_s,
        rate=fmt(variants["unbalanced"].latency.rate),
        settle_s=balance.settle_s,
        measure_s=balance.measure_s,
        result_rows="\n".join(_result_row(name, variants[name]) for name in shown),
        records_ratio=fmt(ratios["records_per_s"], ".2f"),
        p50_ratio=fmt(ratios["p50_s"], ".2f"),
        p99_ratio=fmt(ratios["p99_s"], ".2f"),
        placement_rows="\n".join(
            _placement_row(name, phase, getattr(variants[name], phase).placement)
            for name in shown
            for phase in PHASE_LABELS
        ),
        moves=_moves(variants.get("balanced"), settle_s=balance.settle_s),
        limit=_limit(variants),
        tasks=_tasks(variants["unbalanced"].latency.placement),
        salting=_salting(variants["balanced"].latency.placement),
    )


def _result_row(name: str, variant: Variant) -> str:
    throughput, latency = variant.throughput, variant.latency
    cpu = throughput.reducer_cpu_s
    return (
        f"| {VARIANT_LABELS[name]} | {fmt(throughput.records_per_s)} "
        f"| {fmt(throughput.seconds, '.1f')} "
        f"| {fmt(max(cpu, default=None), '.1f')} / {fmt(min(cpu, default=None), '.1f')} "
        f"| {fmt(throughput.mapper_cpu_s, '.1f')} | {fmt(latency.p50_s, '.3f')} s "
        f"| {fmt(latency.p99_s, '.3f')} s | {fmt(latency.max_s, '.3f')} s "
        f"| {latency.windows} |"
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


def _moves(balanced: Variant | None, *, settle_s: int) -> str:
    if not balanced:
        return ""

    def when(times: list[float]) -> str:
        if not times:
            return "never"
        shown = ", ".join(fmt(t, ".0f") for t in times[:8])
        return f"{shown}{', ...' if len(times) > 8 else ''} s"

    return render(
        "balance_moves",
        throughput=when(balanced.throughput.move_times_s),
        latency=when(balanced.latency.move_times_s),
        settle_s=settle_s,
    )


def _limit(variants: dict[str, Variant]) -> str:
    """What the CPU figures of the throughput runs say limits this workload here."""
    shares = {
        name: (
            max(variant.throughput.reducer_cpu_s, default=math.nan),
            variant.throughput.mapper_cpu_s,
            variant.throughput.seconds,
        )
        for name, variant in variants.items()
    }
    busiest = max((ratio(cpu, seconds) for cpu, _, seconds in shares.values()), default=math.nan)
    if math.isnan(busiest):
        return ""
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
    return f"CPU during the throughput runs ({figures}): {verdict}."


def _tasks(placement: dict[str, Any]) -> str:
    by_task = placement.get("by_task") or {}
    if not by_task:
        return ""
    rows = [
        f"| GROUP BY {label} | {fmt(found['units'])} | {fmt(found['load_max'], ',.1f')} "
        f"| {fmt(found['load_mean'], ',.1f')} | {fmt(found['load_total'], ',.1f')} |"
        for label, found in by_task.items()
    ]
    return render("balance_tasks", rows="\n".join(rows))


def _salting(placement: dict[str, Any]) -> str:
    share = placement.get("largest_over_fair_share", float("nan"))
    verdict = salting_pays(share)
    if verdict is None:
        return ""
    return render(
        "balance_salting_pays" if verdict else "balance_salting_does_not_pay",
        share=fmt(share, ".2f"),
        over_mean=fmt(placement["largest_over_mean"], ".1f"),
    )

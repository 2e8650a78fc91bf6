"""Experiment 9's pure parts: what one look at the assignment and the units' published loads
says (reducer loads, the largest unit, moves), those looks summed up over a phase, the
balanced variant over the unbalanced one, and whether salting a hot key would pay."""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from benchmarks.stats import median, ratio
from mars.registry.units import Unit
from reducer.coordination.load_balance import imbalance, member_loads


@dataclass(frozen=True, slots=True, kw_only=True)
class PlacementLook:
    """One look at the cluster at wall time `t` (epoch s): the assignment (unit -> member, the
    units placed by load among them, its generation), the live members and every unit's
    published load (partial groups merged per second; a unit without one is missing)."""

    t: float
    units: Mapping[Unit, str]
    moves: Mapping[Unit, str]
    generation: int
    members: Collection[str]
    loads: Mapping[Unit, float]

    @property
    def complete(self) -> bool:
        """Every unit assigned, on a live member, with a published load."""
        return (
            bool(self.units)
            and all(unit in self.loads for unit in self.units)
            and set(self.units.values()) <= set(self.members)
        )


def placement_figures(look: PlacementLook, *, labels: Mapping[str, str]) -> dict[str, Any]:
    """The reducers' loads (each the sum of its units' loads), max over min and the spread the
    leader compares with its threshold; the largest unit against the mean unit and against a
    reducer's fair share (the total over the reducers); the units placed by load; and per
    task (`labels`: task id -> label) its units' largest, mean and total load."""
    totals = member_loads(look.units, look.loads, look.members)
    unit_loads = [look.loads.get(unit, 0.0) for unit in look.units]
    largest = max(unit_loads, default=math.nan)
    mean_unit = sum(unit_loads) / len(unit_loads) if unit_loads else math.nan
    fair_share = sum(totals.values()) / len(totals) if totals else math.nan
    by_task: dict[str, list[float]] = {label: [] for label in labels.values()}
    for unit in look.units:
        if unit.task_id in labels:
            by_task[labels[unit.task_id]].append(look.loads.get(unit, 0.0))
    return {
        "reducer_load_max": max(totals.values(), default=math.nan),
        "reducer_load_min": min(totals.values(), default=math.nan),
        "max_over_min": ratio(max(totals.values(), default=math.nan), min(totals.values()))
        if totals
        else math.nan,
        "imbalance": imbalance(totals),
        "largest_unit_load": largest,
        "mean_unit_load": mean_unit,
        "largest_over_mean": ratio(largest, mean_unit),
        "largest_over_fair_share": ratio(largest, fair_share),
        "moves": len(look.moves),
        "by_task": {
            label: {
                "units": len(loads),
                "load_max": max(loads, default=math.nan),
                "load_mean": sum(loads) / len(loads) if loads else math.nan,
                "load_total": sum(loads),
            }
            for label, loads in by_task.items()
        },
    }


def median_figures(found: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Figure by figure (nested dicts too), the median over several `placement_figures`."""
    if not found:
        return {}
    summary: dict[str, Any] = {}
    for name, first in found[0].items():
        values = [figures[name] for figures in found if name in figures]
        if isinstance(first, Mapping):
            summary[name] = median_figures(values)
        else:
            summary[name] = median([float(v) for v in values if not math.isnan(float(v))])
    return summary


def phase_placement(
    looks: Sequence[PlacementLook], *, labels: Mapping[str, str], since: float, until: float
) -> dict[str, Any]:
    """A phase's placement from the complete looks taken in `[since, until]`: the median of
    each figure, the units placed by load at the last look, how often the assignment changed
    between the first and the last, and how many looks there were."""
    inside = [look for look in looks if since <= look.t <= until and look.complete]
    if not inside:
        return {"looks": 0, "moves_at_end": 0, "assignment_changes": 0}
    generations = {look.generation for look in inside}
    return {
        **median_figures([placement_figures(look, labels=labels) for look in inside]),
        "looks": len(inside),
        "moves_at_end": len(inside[-1].moves),
        "assignment_changes": len(generations) - 1,
    }


def move_times(looks: Sequence[PlacementLook], *, since: float) -> list[float]:
    """Seconds after `since` at which the units placed by load changed (looks in time order)."""
    times, previous = [], None
    for look in looks:
        moved = dict(look.moves)
        if previous is not None and moved != previous:
            times.append(look.t - since)
        previous = moved
    return times


@dataclass(frozen=True, slots=True, kw_only=True)
class ThroughputPhase:
    """The four tasks over the preloaded topic: until every data window was readable, the
    CPU of the mappers (together) and of each reducer, the placement over the run's second
    half (`phase_placement`) and when the moves changed (seconds from registering)."""

    seconds: float = math.nan
    records_per_s: float = math.nan
    complete: bool = False
    duplicates: int = 0
    mapper_cpu_s: float = math.nan
    reducer_cpu_s: list[float] = field(default_factory=list)
    placement: dict[str, Any] = field(default_factory=dict)
    move_times_s: list[float] = field(default_factory=list)


@dataclass(frozen=True, slots=True, kw_only=True)
class LatencyPhase:
    """Paced traffic into four fresh tasks: the latency of the measured part's windows (all
    tasks together, and the p99 per task), its placement and when the moves changed."""

    rate: float = math.nan
    windows: int = 0
    p50_s: float = math.nan
    p99_s: float = math.nan
    max_s: float = math.nan
    by_task: dict[str, dict[str, float]] = field(default_factory=dict)
    placement: dict[str, Any] = field(default_factory=dict)
    move_times_s: list[float] = field(default_factory=list)


@dataclass(frozen=True, slots=True, kw_only=True)
class Variant:
    """One variant (`env`: its MARS_BALANCE__ settings) and its two phases."""

    env: dict[str, str] = field(default_factory=dict)
    throughput: ThroughputPhase = field(default_factory=ThroughputPhase)
    latency: LatencyPhase = field(default_factory=LatencyPhase)


def balance_ratios(balanced: Variant, unbalanced: Variant) -> dict[str, float]:
    """The balanced variant over the unbalanced one, for throughput, latency and spread."""

    def of(variant: Variant) -> dict[str, float]:
        spread = variant.latency.placement.get("max_over_min", math.nan)
        return {
            "records_per_s": variant.throughput.records_per_s,
            "p50_s": variant.latency.p50_s,
            "p99_s": variant.latency.p99_s,
            "max_over_min": float(spread),
        }

    on, off = of(balanced), of(unbalanced)
    return {name: ratio(on[name], off[name]) for name in on}


def salting_pays(largest_over_fair_share: float) -> bool | None:
    """Whether splitting a hot unit (salting its keys over several buckets) could even the
    reducers where moving whole units cannot: only when one unit alone carries more than a
    reducer's fair share of the load (None when unknown). Mappers pre-aggregate, so a key,
    however hot, is one partial group per batch: salting it over k buckets makes k."""
    if math.isnan(largest_over_fair_share):
        return None
    return largest_over_fair_share > 1.0

"""Load moves on top of consistent hashing: SPSPS's BalanceLoad (seed 000), rate-limited.

The leader places units by consistent hashing with virtual nodes (seed 003) and evens out
unit counts (`balance_unit_counts`); that is the default and what a unit falls back to. On top
of it `LoadBalancer.refine` keeps *moves*: units placed elsewhere because of load, recorded in
the assignment (`Assignment.moves`) so a new leader keeps them. A round of new moves runs when

- the loads of the reducers spread more than the UIT (`imbalance_threshold`, as standard
  deviation over mean), and
- the last round is `interval_s` old;

it moves at most `max_moves` units with `balance_load` (the hottest unit of the busiest
reducer to the idlest, while that lowers the busiest load), never a unit moved less than
`unit_cooldown_s` ago, and is dropped unless it cuts the busiest reducer's load by `min_gain`.
So noise in the measured loads does not make units flap.

A unit's load is what its owner publishes with its figures: partial groups merged per second,
smoothed (`reducer.bucket_owner`), the work a reducer does per unit; the last known value is
kept while a unit changes owner. A move costs the unit one hand-over: the old owner stops, the
new one fences it and rebuilds from the committed checkpoint (docs/reducer.md), so a move can
neither lose nor double count.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from mars.config import BalanceSettings
from mars.registry.units import Unit
from mars.store.reducer_stats import ReducerStats, figure_float
from reducer.coordination.balance import balance_load

LoadReader = Callable[[Iterable[Unit]], Mapping[Unit, float]]


def published_loads(stats: ReducerStats) -> LoadReader:
    """Reads the `load` figure each unit's owner publishes (units without one are left out)."""

    def read(units: Iterable[Unit]) -> dict[Unit, float]:
        wanted: dict[str, set[int]] = {}
        for unit in units:
            wanted.setdefault(unit.task_id, set()).add(unit.bucket)
        loads: dict[Unit, float] = {}
        for task, buckets in wanted.items():
            for bucket, figures in stats.units(task).items():
                load = figure_float(figures, "load")
                if bucket in buckets and load is not None:
                    loads[Unit(task, bucket)] = load
        return loads

    return read


def member_loads(
    placement: Mapping[Unit, str], loads: Mapping[Unit, float], members: Iterable[str]
) -> dict[str, float]:
    """Each member's load: the sum of its units' loads (0 for a member owning nothing)."""
    totals = dict.fromkeys(members, 0.0)
    for unit, member in placement.items():
        totals[member] = totals.get(member, 0.0) + loads.get(unit, 0.0)
    return totals


def imbalance(totals: Mapping[str, float]) -> float:
    """Standard deviation over mean of the members' loads (0 when there is no load)."""
    values = list(totals.values())
    mean = sum(values) / len(values) if values else 0.0
    if mean <= 0:
        return 0.0
    return math.sqrt(sum((v - mean) ** 2 for v in values) / len(values)) / mean


@dataclass(frozen=True, slots=True, kw_only=True)
class Refined:
    units: dict[Unit, str]
    moves: dict[Unit, str]  # the units placed away from `base` (kept in the assignment)


class LoadBalancer:
    """The leader's load moves; keeps the last known load of each unit and when it moved."""

    def __init__(
        self,
        read_loads: LoadReader,
        settings: BalanceSettings,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._read_loads = read_loads
        self._settings = settings
        self._clock = clock
        self._known: dict[Unit, float] = {}
        self._moved_at: dict[Unit, float] = {}
        self._last_round: float | None = None

    def refine(
        self, base: Mapping[Unit, str], members: frozenset[str], moves: Mapping[Unit, str]
    ) -> Refined:
        """`base` with the still valid `moves` applied, plus a round of new ones when due."""
        units = dict(base)
        for unit, member in moves.items():
            if unit in units and member in members:
                units[unit] = member
        now = self._clock()
        if self._settings.enabled and self._round_due(now):
            units = self._round(units, members, now)
        return Refined(units=units, moves={u: m for u, m in units.items() if base[u] != m})

    def _round_due(self, now: float) -> bool:
        return self._last_round is None or now - self._last_round >= self._settings.interval_s

    def _round(
        self, units: dict[Unit, str], members: frozenset[str], now: float
    ) -> dict[Unit, str]:
        known = {unit: load for unit, load in self._known.items() if unit in units}
        self._known = {**known, **self._read_loads(units)}
        loads = {unit: self._known.get(unit, 0.0) for unit in units}
        before = member_loads(units, loads, members)
        if imbalance(before) <= self._settings.imbalance_threshold:
            return units
        self._last_round = now
        cooldown = self._settings.unit_cooldown_s
        self._moved_at = {u: at for u, at in self._moved_at.items() if now - at < cooldown}
        refined = balance_load(
            units, loads, members=members, max_moves=self._settings.max_moves, fixed=self._moved_at
        )
        after = member_loads(refined, loads, members)
        if max(after.values()) > max(before.values()) * (1 - self._settings.min_gain):
            return units  # not worth a hand-over
        for unit, member in refined.items():
            if units[unit] != member:
                self._moved_at[unit] = now
        return refined

"""Load moves over consistent hashing: [SPSPS]'s BalanceLoad, rate-limited (docs/references.md).

The leader places units by consistent hashing with virtual nodes ([XORTrack]) and evens out
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

Pressure comes first ([BPMigration]): a reducer one of whose units has a backlog of unmerged
data sets 80 % of `pressure_backlog` or more, while its units' backlogs grow in total (input
above output), is relieved in the next round whatever the spread: its hottest unit moves to the
least loaded other reducer, one unit a round while the pressure lasts (not down to the mean
load: a reducer that falls behind merges less, so its measured load understates its input).

A unit's load and backlog are what its owner publishes with its figures: partial groups merged
per second, smoothed, the work a reducer does per unit, and the data sets written but not yet
merged after its last read (`reducer.unit_owner`); the last known load is kept while a unit
changes owner. A move costs the unit one hand-over: the old owner stops, the
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
from mars.store.reducer_stats import ReducerStats, figure_float, figure_int
from reducer.coordination.balance import balance_load

PRESSURED_QUEUE = 0.8  # [BPMigration]: a queue this full, and growing, is backpressure
MIN_GROWTH_SPAN_S = 1.0  # backlog growth is measured over at least this long


@dataclass(frozen=True, slots=True, kw_only=True)
class UnitFigures:
    """What the leader reads of a unit: its load and its backlog (None: not published)."""

    load: float | None
    backlog: int | None


FigureReader = Callable[[Iterable[Unit]], Mapping[Unit, UnitFigures]]


def published_figures(stats: ReducerStats) -> FigureReader:
    """Reads the `load` and `backlog` figures each unit's owner publishes."""

    def read(units: Iterable[Unit]) -> dict[Unit, UnitFigures]:
        wanted: dict[str, set[int]] = {}
        for unit in units:
            wanted.setdefault(unit.task_id, set()).add(unit.bucket)
        found: dict[Unit, UnitFigures] = {}
        for task, buckets in wanted.items():
            for bucket, figures in stats.units(task).items():
                if bucket in buckets:
                    found[Unit(task, bucket)] = UnitFigures(
                        load=figure_float(figures, "load"), backlog=figure_int(figures, "backlog")
                    )
        return found

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
    """The leader's load moves; keeps each unit's last known load, its backlog trend and when
    it last moved."""

    def __init__(
        self,
        read_figures: FigureReader,
        settings: BalanceSettings,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._read_figures = read_figures
        self._settings = settings
        self._clock = clock
        self._loads: dict[Unit, float] = {}
        self._backlogs: dict[Unit, tuple[float, int]] = {}  # (when read, data sets)
        self._growth: dict[Unit, float] = {}  # backlog growth, data sets per second
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
        if self._settings.enabled:
            self._observe(units, now)
            if self._round_due(now):
                pressured = self.pressured(units, members)
                if pressured is not None:
                    units = self._relieve(units, members, pressured, now)
                else:
                    units = self._round(units, members, now)
        return Refined(units=units, moves={u: m for u, m in units.items() if base[u] != m})

    def pressured(self, units: Mapping[Unit, str], members: Iterable[str]) -> str | None:
        """The most pressured reducer, if one is ([BPMigration]): a unit's queue (its backlog of
        data sets over `pressure_backlog`) is 80 % full and its backlog grows in total. A
        unit that moved within the cooldown is left out: it is still catching up, and its
        queue says nothing about its new owner yet."""
        queue: dict[str, float] = dict.fromkeys(members, 0.0)
        growth: dict[str, float] = dict.fromkeys(members, 0.0)
        for unit, member in units.items():
            if unit in self._moved_at:
                continue
            backlog = self._backlogs.get(unit, (0.0, 0))[1]
            queue[member] = max(queue[member], backlog / self._settings.pressure_backlog)
            growth[member] += self._growth.get(unit, 0.0)
        pressured = [m for m in queue if queue[m] >= PRESSURED_QUEUE and growth[m] > 0]
        return max(pressured, key=lambda m: (queue[m], growth[m], m)) if pressured else None

    def _observe(self, units: Mapping[Unit, str], now: float) -> None:
        """Read the units' figures; keep the last known load and each backlog's growth."""
        for unit, figures in self._read_figures(units).items():
            if figures.load is not None:
                self._loads[unit] = figures.load
            if figures.backlog is None:
                continue
            previous = self._backlogs.get(unit)
            if previous is not None and now - previous[0] >= MIN_GROWTH_SPAN_S:
                self._growth[unit] = (figures.backlog - previous[1]) / (now - previous[0])
            if previous is None or now - previous[0] >= MIN_GROWTH_SPAN_S:
                self._backlogs[unit] = (now, figures.backlog)
        for known in (self._loads, self._backlogs, self._growth):
            for unit in [u for u in known if u not in units]:
                del known[unit]

    def _round_due(self, now: float) -> bool:
        return self._last_round is None or now - self._last_round >= self._settings.interval_s

    def _cooling(self, now: float) -> dict[Unit, float]:
        cooldown = self._settings.unit_cooldown_s
        self._moved_at = {u: at for u, at in self._moved_at.items() if now - at < cooldown}
        return self._moved_at

    def _round(
        self, units: dict[Unit, str], members: frozenset[str], now: float
    ) -> dict[Unit, str]:
        loads = {unit: self._loads.get(unit, 0.0) for unit in units}
        before = member_loads(units, loads, members)
        if imbalance(before) <= self._settings.imbalance_threshold:
            return units
        self._last_round = now
        refined = balance_load(
            units,
            loads,
            members=members,
            max_moves=self._settings.max_moves,
            fixed=self._cooling(now),
        )
        after = member_loads(refined, loads, members)
        if max(after.values()) > max(before.values()) * (1 - self._settings.min_gain):
            return units  # not worth a hand-over
        return self._moved(units, refined, now)

    def _relieve(
        self, units: dict[Unit, str], members: frozenset[str], donor: str, now: float
    ) -> dict[Unit, str]:
        """Move the pressured `donor`'s hottest unit to the least loaded other reducer: one
        unit a round, while the pressure lasts. Not "down to the mean load": a reducer that
        falls behind merges less, so its measured load understates the input it is given."""
        self._last_round = now
        loads = {unit: self._loads.get(unit, 0.0) for unit in units}
        totals = member_loads(units, loads, members)
        cooling = self._cooling(now)
        owned = [u for u, m in units.items() if m == donor]
        movable = [u for u in owned if u not in cooling]
        receivers = [m for m in totals if m != donor]
        if len(owned) < 2 or not movable or not receivers:
            return units  # a lone unit would only take its pressure elsewhere
        unit = max(movable, key=lambda u: (loads[u], u))
        refined = dict(units)
        refined[unit] = min(receivers, key=lambda m: (totals[m], m))
        return self._moved(units, refined, now)

    def _moved(
        self, before: Mapping[Unit, str], after: dict[Unit, str], now: float
    ) -> dict[Unit, str]:
        for unit, member in after.items():
            if before[unit] != member:
                self._moved_at[unit] = now
        return after

"""FIRST(expr) and LAST(expr): the value at the group's earliest / latest event time.

The input of these aggregates is the pair (event time in ms, value) (`by_event_time`), and the
state the pair kept so far, None for an empty group. Records often share a timestamp, and a
batch or partition split must not change the result, so ties are broken by the value itself:
FIRST keeps the smallest value among the earliest records, LAST the largest among the latest
(values ordered as MIN and MAX order them, `sort_key`). Arrival order (Kafka offsets) is not
used: offsets of different partitions are not comparable, and a group spans partitions. NULL
values are skipped, as Flink's FIRST_VALUE / LAST_VALUE and ksqlDB's EARLIEST_BY_OFFSET do by
default: the result is NULL only when the group has no value.

`merge` picks one of its two states by a total order on (time, value, value's type), so it is
associative and commutative, and `initial()` (None) is its identity.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from mars.aggregates.base import TIMED_TIME, TIMED_VALUE, Aggregate
from mars.aggregates.extremum import sort_key
from mars.tasks.spec import AggFunc

Timed = tuple[int, Any] | None  # (event time in ms, value); None: no value yet


def _order(state: tuple[int, Any]) -> tuple[int, tuple[int, Any], str]:
    # The type name last: 1 and 1.0 (or True and 1) compare equal but are different values.
    time, value = state
    return (time, sort_key(value), type(value).__name__)


class _AtEventTime(Aggregate[Timed]):
    by_event_time = True
    latest: bool  # LAST: the latest time (and largest value); FIRST: the earliest (smallest)

    def initial(self) -> Timed:
        return None

    def add(self, state: Timed, value: Any) -> Timed:
        time, inner = value
        return state if inner is None else self.merge(state, (int(time), inner))

    def merge(self, left: Timed, right: Timed) -> Timed:
        if left is None:
            return right
        if right is None:
            return left
        right_wins = _order(right) > _order(left)
        return right if right_wins == self.latest else left

    def result(self, state: Timed) -> Any:
        return None if state is None else state[1]

    def partial_exprs(self, argument: pl.Expr | None, prefix: str) -> list[pl.Expr]:
        assert argument is not None, f"{self.func} needs an argument"
        time = argument.struct.field(TIMED_TIME)
        value = argument.struct.field(TIMED_VALUE)
        present = value.is_not_null()
        valued_times = time.filter(present)
        edge = valued_times.max() if self.latest else valued_times.min()
        tied = value.filter(present & (time == edge))
        picked = tied.max() if self.latest else tied.min()
        return [edge.alias(f"{prefix}t"), picked.alias(f"{prefix}v")]

    def states_from_frame(self, frame: pl.DataFrame, prefix: str) -> list[Timed]:
        times = frame.get_column(f"{prefix}t").to_list()
        values = frame.get_column(f"{prefix}v").to_list()
        return [
            None if time is None else (time, value)
            for time, value in zip(times, values, strict=True)
        ]

    def to_wire(self, state: Timed) -> Any:
        return None if state is None else [state[0], state[1]]

    def from_wire(self, wire: Any) -> Timed:
        return None if wire is None else (int(wire[0]), wire[1])


class First(_AtEventTime):
    """FIRST: the value at the earliest event time (the smallest value among ties)."""

    func = AggFunc.FIRST
    latest = False


class Last(_AtEventTime):
    """LAST: the value at the latest event time (the largest value among ties)."""

    func = AggFunc.LAST
    latest = True

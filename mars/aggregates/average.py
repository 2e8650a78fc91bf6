"""AVG(expr), carried as (sum, count) so that partials merge associatively."""

from __future__ import annotations

from typing import Any

import polars as pl

from mars.aggregates.base import Aggregate
from mars.aggregates.sum import summed_values
from mars.tasks.spec import AggFunc

SumCount = tuple[int | float, int]


class Average(Aggregate[SumCount]):
    """AVG ignores NULLs; NULL when the group has no values."""

    func = AggFunc.AVG
    numeric_argument = True
    sums_argument = True

    def initial(self) -> SumCount:
        return (0, 0)

    def add(self, state: SumCount, value: Any) -> SumCount:
        if value is None:
            return state
        return (state[0] + value, state[1] + 1)

    def merge(self, left: SumCount, right: SumCount) -> SumCount:
        return (left[0] + right[0], left[1] + right[1])

    def result(self, state: SumCount) -> float | None:
        total, count = state
        return total / count if count else None

    def partial_exprs(self, argument: pl.Expr | None, prefix: str) -> list[pl.Expr]:
        assert argument is not None, "AVG needs an argument"
        return [argument.sum().alias(f"{prefix}sum"), argument.count().alias(f"{prefix}n")]

    def states_from_frame(self, frame: pl.DataFrame, prefix: str) -> list[SumCount]:
        sums = summed_values(frame.get_column(f"{prefix}sum"))
        counts = frame.get_column(f"{prefix}n").to_list()
        return [(s if n else 0, int(n)) for s, n in zip(sums, counts, strict=True)]

    def to_wire(self, state: SumCount) -> Any:
        return [state[0], state[1]]

    def from_wire(self, wire: Any) -> SumCount:
        return (wire[0], int(wire[1]))

"""COUNT(*) and COUNT(expr): the state is the count, an int."""

from __future__ import annotations

from typing import Any

import polars as pl

from mars.aggregates.base import Aggregate
from mars.tasks.spec import AggFunc


class _Count(Aggregate[int]):
    func = AggFunc.COUNT

    def initial(self) -> int:
        return 0

    def merge(self, left: int, right: int) -> int:
        return left + right

    def result(self, state: int) -> int:
        return state

    def states_from_frame(self, frame: pl.DataFrame, prefix: str) -> list[int]:
        return [int(n) for n in frame.get_column(f"{prefix}n").to_list()]

    def wire_column(self, frame: pl.DataFrame, prefix: str) -> pl.Series:
        return frame.get_column(f"{prefix}n").cast(pl.Int64)  # no nulls: the wire ints


class CountAll(_Count):
    """COUNT(*): every record of the group, nulls included."""

    def add(self, state: int, value: Any) -> int:
        return state + 1

    def partial_exprs(self, argument: pl.Expr | None, prefix: str) -> list[pl.Expr]:
        return [pl.len().cast(pl.Int64).alias(f"{prefix}n")]


class CountNonNull(_Count):
    """COUNT(expr): the records whose argument is not NULL."""

    def add(self, state: int, value: Any) -> int:
        return state if value is None else state + 1

    def partial_exprs(self, argument: pl.Expr | None, prefix: str) -> list[pl.Expr]:
        assert argument is not None, "COUNT(expr) needs an argument"
        return [argument.count().cast(pl.Int64).alias(f"{prefix}n")]

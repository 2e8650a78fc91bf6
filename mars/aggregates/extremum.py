"""MIN(expr) and MAX(expr): the state is the extreme value so far, or None if none was seen."""

from __future__ import annotations

from typing import Any

import polars as pl

from mars.aggregates.base import Aggregate
from mars.tasks.spec import AggFunc


def sort_key(value: Any) -> tuple[int, Any]:
    """A total order across the scalar kinds a field may hold in different batches.

    Numbers (and booleans) order before strings, strings before anything else, so merging
    partials of a field whose type changed between batches never raises.
    """
    if isinstance(value, int | float):
        return (0, value)
    if isinstance(value, str):
        return (1, value)
    return (2, repr(value))


class _Extremum(Aggregate[Any]):
    pick_max: bool

    def initial(self) -> Any:
        return None

    def add(self, state: Any, value: Any) -> Any:
        return self.merge(state, value)

    def merge(self, left: Any, right: Any) -> Any:
        if left is None:
            return right
        if right is None:
            return left
        right_wins = sort_key(right) > sort_key(left)
        return right if right_wins == self.pick_max else left

    def result(self, state: Any) -> Any:
        return state

    def partial_exprs(self, argument: pl.Expr | None, prefix: str) -> list[pl.Expr]:
        assert argument is not None, f"{self.func} needs an argument"
        picked = argument.max() if self.pick_max else argument.min()
        return [picked.alias(f"{prefix}v")]

    def states_from_frame(self, frame: pl.DataFrame, prefix: str) -> list[Any]:
        return frame.get_column(f"{prefix}v").to_list()

    def wire_column(self, frame: pl.DataFrame, prefix: str) -> pl.Series:
        return frame.get_column(f"{prefix}v")  # the state is its own wire form


class Min(_Extremum):
    """MIN ignores NULLs; NULL when the group has no values."""

    func = AggFunc.MIN
    pick_max = False


class Max(_Extremum):
    """MAX ignores NULLs; NULL when the group has no values."""

    func = AggFunc.MAX
    pick_max = True

"""COUNT(DISTINCT expr), exact: the state is the set of distinct non-null values."""

from __future__ import annotations

import math
import struct
from typing import Any

import polars as pl

from mars.aggregates.base import Aggregate
from mars.aggregates.extremum import sort_key
from mars.tasks.spec import AggFunc


class CountDistinct(Aggregate[frozenset[Any]]):
    """Exact distinct count; memory grows with the number of distinct values per group."""

    func = AggFunc.COUNT_DISTINCT

    def initial(self) -> frozenset[Any]:
        return frozenset()

    def add(self, state: frozenset[Any], value: Any) -> frozenset[Any]:
        return state if value is None else state | {value}

    def merge(self, left: frozenset[Any], right: frozenset[Any]) -> frozenset[Any]:
        return left | right

    def result(self, state: frozenset[Any]) -> int:
        return len(state)

    def partial_exprs(self, argument: pl.Expr | None, prefix: str) -> list[pl.Expr]:
        assert argument is not None, "COUNT(DISTINCT) needs an argument"
        return [argument.drop_nulls().unique().alias(f"{prefix}set")]

    def states_from_frame(self, frame: pl.DataFrame, prefix: str) -> list[frozenset[Any]]:
        return [frozenset(values) for values in frame.get_column(f"{prefix}set").to_list()]

    def wires_from_frame(self, frame: pl.DataFrame, prefix: str) -> list[Any]:
        """Integer and string sets sorted by Polars: `sort_key`'s order for one kind (strings
        by code point, as UTF-8 bytes sort), without a Python set and sort per group."""
        column = frame.get_column(f"{prefix}set")
        inner = column.dtype.inner if isinstance(column.dtype, pl.List) else None
        if inner is not None and (inner.is_integer() or inner == pl.String):
            return column.list.sort().to_list()
        return super().wires_from_frame(frame, prefix)

    def to_wire(self, state: frozenset[Any]) -> Any:
        # Sorted, so the same state always encodes to the same bytes in every process.
        return sorted(state, key=_wire_order)

    def from_wire(self, wire: Any) -> frozenset[Any]:
        return frozenset(wire)


def _wire_order(value: Any) -> tuple[Any, ...]:
    """`sort_key`, with NaNs after every number, in the order of their bytes: a NaN compares
    False with everything, so a set holding one sorted in the order it iterated in (its hash is
    its identity's), and the same state encoded to other bytes."""
    if isinstance(value, float) and math.isnan(value):
        return (0, math.inf, struct.pack(">d", value))
    return sort_key(value)

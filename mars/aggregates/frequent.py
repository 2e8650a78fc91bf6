"""TOPK(col, k): a group's k most frequent values, on a mergeable Misra-Gries summary.

The state is (n, counters): the number of non-null values seen and at most `capacity(k)`
value -> count counters [MisraGries]. Two summaries merge by adding their counters; when more
than m = `capacity(k)` remain, the (m+1)-th largest count is subtracted from every counter and
those left at zero or below are dropped [MergeableSummaries]. Each kept count is then at most
(n - sum of counts) / (m + 1) <= n / (m + 1) below the true count, never above it, and every
value more frequent than n / (m + 1) keeps a counter, whatever the grouping and order of the
merges. A group of at most m distinct values is never trimmed: its counts, and so its TOPK,
are exact.

The result is the list of the k values with the largest counts (fewer if the group has fewer
distinct values), most frequent first, equal counts in ascending value order (numbers before
strings, as MIN orders them); NULL for a group without values. Values keep their type. Counts
are not returned: like DuckDB's approx_top_k and ClickHouse's topK, a list of values.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import polars as pl

from mars.aggregates.base import Aggregate
from mars.aggregates.extremum import sort_key
from mars.tasks.spec import AggFunc

MAX_K = 1000
MIN_CAPACITY = 256

Summary = tuple[int, Mapping[Any, int]]  # (values seen, value -> count); never mutated

_EMPTY: Summary = (0, {})


def capacity(k: int) -> int:
    """The counters a TOPK(col, k) summary keeps: 4 k, at least 256."""
    return max(MIN_CAPACITY, 4 * k)


def trimmed(counts: dict[Any, int], limit: int) -> dict[Any, int]:
    """`counts` reduced to at most `limit` counters by the Misra-Gries decrement."""
    if len(counts) <= limit:
        return counts
    cut = sorted(counts.values(), reverse=True)[limit]  # the (limit+1)-th largest count
    return {value: count - cut for value, count in counts.items() if count > cut}


def _sorted_wire(values: list[Any], counts: list[int]) -> list[Any]:
    """The wire form of an untrimmed summary from a batch's aligned lists: a Polars column
    holds one type, whose natural order is `sort_key`'s, so no key function is needed."""
    order = sorted(range(len(values)), key=values.__getitem__)
    return [sum(counts), [values[i] for i in order], [counts[i] for i in order]]


class TopK(Aggregate[Summary]):
    """TOPK(col, k): the k most frequent values of the group (a list), or NULL."""

    func = AggFunc.TOPK

    def __init__(self, k: int = 10) -> None:
        self.k = k
        self.capacity = capacity(k)

    @classmethod
    def with_parameters(cls, parameters: tuple[float, ...]) -> Aggregate[Any]:
        if len(parameters) != 1:
            raise ValueError("TOPK takes a column and k, the number of values to return")
        (k,) = parameters
        if k != int(k) or not 1 <= k <= MAX_K:
            raise ValueError(f"TOPK's k must be a whole number from 1 to {MAX_K}, got {k:g}")
        return cls(int(k))

    @property
    def parameters(self) -> tuple[float, ...]:
        return (float(self.k),)

    def initial(self) -> Summary:
        return _EMPTY

    def add(self, state: Summary, value: Any) -> Summary:
        if value is None:
            return state
        return self.merge(state, (1, {value: 1}))

    def merge(self, left: Summary, right: Summary) -> Summary:
        if not right[0]:
            return left
        if not left[0]:
            return right
        counts = dict(left[1])
        for value, count in right[1].items():
            counts[value] = counts.get(value, 0) + count
        return (left[0] + right[0], trimmed(counts, self.capacity))

    def result(self, state: Summary) -> list[Any] | None:
        n, counts = state
        if not n:
            return None
        ranked = sorted(counts.items(), key=lambda item: (-item[1], sort_key(item[0])))
        return [value for value, _ in ranked[: self.k]]

    def max_error(self, state: Summary) -> float:
        """How far below its true count any counter of `state` may be."""
        n, counts = state
        return (n - sum(counts.values())) / (self.capacity + 1)

    def partial_exprs(self, argument: pl.Expr | None, prefix: str) -> list[pl.Expr]:
        assert argument is not None, "TOPK needs an argument"
        present = argument.drop_nulls()
        # Both in order of first appearance, so the i-th count is the i-th value's.
        return [
            present.unique(maintain_order=True).alias(f"{prefix}values"),
            present.unique_counts().alias(f"{prefix}counts"),
        ]

    def states_from_frame(self, frame: pl.DataFrame, prefix: str) -> list[Summary]:
        values = frame.get_column(f"{prefix}values").to_list()
        counts = frame.get_column(f"{prefix}counts").to_list()
        return [self._summary(v, c) for v, c in zip(values, counts, strict=True)]

    def wires_from_frame(self, frame: pl.DataFrame, prefix: str) -> list[Any]:
        values = frame.get_column(f"{prefix}values").to_list()
        counts = frame.get_column(f"{prefix}counts").to_list()
        return [
            _sorted_wire(v, c) if len(v) <= self.capacity else self.to_wire(self._summary(v, c))
            for v, c in zip(values, counts, strict=True)
        ]

    def _summary(self, values: Iterable[Any], counts: Iterable[int]) -> Summary:
        table = dict(zip(values, counts, strict=True))
        if not table:
            return _EMPTY
        return (sum(table.values()), trimmed(table, self.capacity))

    def to_wire(self, state: Summary) -> Any:
        # [n, values, counts], values sorted: one state always encodes to the same bytes.
        n, counts = state
        ordered = sorted(counts, key=sort_key)
        return [n, ordered, [counts[value] for value in ordered]]

    def from_wire(self, wire: Any) -> Summary:
        n, values, counts = wire
        return (int(n), dict(zip(values, counts, strict=True)))

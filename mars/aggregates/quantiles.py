"""APPROX_PERCENTILE (and APPROX_MEDIAN) with an Apache DataSketches KLL doubles sketch [KLL].

The state is the sketch's serialization (k = 200). A group of at most k values is kept whole,
so its percentiles are exact; beyond that the sketch compacts and a returned value's rank in
the group's exact values is within `RANK_ERROR` (1.33 %, at 99 % confidence) of the asked
fraction. Fractions 0 and 1 give the exact minimum and maximum at any size. Merging sketches
keeps the bound in any grouping and order, though the merged sketch itself depends on the
order (compaction flips coins).

The value returned for a fraction p is one of the group's values: the smallest v with at
least p * n of the n values <= v (the minimum for p = 0), numpy's `inverted_cdf`; DuckDB's
quantile_cont interpolates between two values instead. Every value is read as a double, so
the result is a float.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
from datasketches import kll_doubles_sketch

from mars.aggregates.base import Aggregate, SketchAggregate
from mars.tasks.spec import AggFunc

K = 200
# Single-sided normalized rank error of a sketch of k = 200 at 99 % confidence (0.0133);
# DataSketches quotes 1.65 % for k = 200, the double-sided (PMF) figure.
RANK_ERROR = kll_doubles_sketch.get_normalized_rank_error(K, False)


def _sketch_bytes(values: np.ndarray[Any, np.dtype[np.float64]]) -> bytes:
    sketch = kll_doubles_sketch(K)
    if values.size:
        sketch.update(values)
    return bytes(sketch.serialize())


_EMPTY = _sketch_bytes(np.empty(0, dtype=np.float64))


def _quantile(sketch: kll_doubles_sketch, fraction: float) -> float:
    # The sketch keeps the exact minimum and maximum, though a compacted sketch may no longer
    # hold them among its items: fractions 0 and 1 are exact whatever the group's size.
    if fraction == 0.0:
        return float(sketch.get_min_value())
    if fraction == 1.0:
        return float(sketch.get_max_value())
    return float(sketch.get_quantile(fraction, True))


def check_fraction(fraction: float) -> float:
    """`fraction` if it is a percentile's fraction, [0, 1]; else ValueError."""
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(
            f"APPROX_PERCENTILE's fraction must be between 0 and 1, got {fraction:g} "
            "(0.99 is the 99th percentile)"
        )
    return fraction


class ApproxPercentile(SketchAggregate):
    """APPROX_PERCENTILE(col, p): the value at fraction p of the group's values, or NULL."""

    func = AggFunc.APPROX_PERCENTILE
    numeric_argument = True

    def __init__(self, fractions: tuple[float, ...] = (0.5,)) -> None:
        self._fractions = fractions

    @classmethod
    def with_parameters(cls, parameters: tuple[float, ...]) -> Aggregate[Any]:
        if len(parameters) != 1:
            raise ValueError("APPROX_PERCENTILE takes a column and one fraction (or a list)")
        return cls((check_fraction(parameters[0]),))

    @property
    def parameters(self) -> tuple[float, ...]:
        return self._fractions

    def initial(self) -> bytes:
        return _EMPTY

    def add(self, state: bytes, value: Any) -> bytes:
        if value is None:
            return state
        sketch = kll_doubles_sketch.deserialize(state)
        sketch.update(float(value))
        return bytes(sketch.serialize())

    def merge(self, left: bytes, right: bytes) -> bytes:
        if right == _EMPTY:
            return left
        if left == _EMPTY:
            return right
        sketch = kll_doubles_sketch.deserialize(left)
        sketch.merge(kll_doubles_sketch.deserialize(right))
        return bytes(sketch.serialize())

    def result(self, state: bytes) -> Any:
        quantiles = self.quantiles(state)
        return None if quantiles is None else quantiles[0]

    def quantiles(self, state: bytes) -> list[float] | None:
        """The value at each fraction, in order; None for an empty group."""
        sketch = kll_doubles_sketch.deserialize(state)
        if sketch.is_empty():
            return None
        return [_quantile(sketch, p) for p in self._fractions]

    def partial_exprs(self, argument: pl.Expr | None, prefix: str) -> list[pl.Expr]:
        assert argument is not None, "APPROX_PERCENTILE needs an argument"
        return [argument.drop_nulls().cast(pl.Float64).alias(f"{prefix}values")]

    def states_from_frame(self, frame: pl.DataFrame, prefix: str) -> list[bytes]:
        # One flat array for all groups, cut by each group's length: the sketches are fed
        # numpy slices, no Python object per value.
        lists = frame.get_column(f"{prefix}values")
        ends = np.cumsum(lists.list.len().fill_null(0).to_numpy(), dtype=np.int64)
        # An empty group's list explodes to one NULL; the values themselves hold none.
        # A copy: the binding only takes writable arrays, and Polars' view is read-only.
        flat = np.array(lists.explode().drop_nulls().to_numpy(), dtype=np.float64)
        starts = np.concatenate((np.zeros(1, dtype=np.int64), ends[:-1]))
        return [_sketch_bytes(flat[s:e]) for s, e in zip(starts, ends, strict=True)]


class ApproxPercentiles(ApproxPercentile):
    """APPROX_PERCENTILE(col, [p1, p2, ...]): the list of values at each fraction, or NULL."""

    func = AggFunc.APPROX_PERCENTILES

    @classmethod
    def with_parameters(cls, parameters: tuple[float, ...]) -> Aggregate[Any]:
        if not parameters:
            raise ValueError("APPROX_PERCENTILE's list of fractions is empty")
        return cls(tuple(check_fraction(p) for p in parameters))

    def result(self, state: bytes) -> Any:
        return self.quantiles(state)

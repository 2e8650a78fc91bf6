"""VAR_POP, VAR_SAMP, STDDEV_POP and STDDEV_SAMP over the moments (count, mean, M2).

M2 is the sum of squared deviations from the mean. Partials merge with the parallel update of
[ChanVariance]: unlike a (sum, sum of squares) state it does not subtract two huge, nearly
equal numbers, so the spread of values around a large offset (1e9 plus small noise) keeps its
precision however the partials are split and merged. NULLs are ignored; every
result is NULL for a group without values, and the SAMP ones also for a group of one value
(as in DuckDB and PostgreSQL).
"""

from __future__ import annotations

import math
from abc import abstractmethod
from typing import Any

import polars as pl

from mars.aggregates.base import Aggregate
from mars.tasks.spec import AggFunc

Moments = tuple[int, float, float]  # (count, mean, M2)

_EMPTY: Moments = (0, 0.0, 0.0)


class _Spread(Aggregate[Moments]):
    numeric_argument = True

    def initial(self) -> Moments:
        return _EMPTY

    def add(self, state: Moments, value: Any) -> Moments:
        if value is None:
            return state
        # Welford's update: the merge with a group of one value.
        return self.merge(state, (1, float(value), 0.0))

    def merge(self, left: Moments, right: Moments) -> Moments:
        if right[0] == 0:
            return left
        if left[0] == 0:
            return right
        # One operand order for both argument orders: the result is then bitwise the same
        # whichever partial came first (the formula alone is commutative only up to rounding).
        if right > left:
            left, right = right, left
        n_a, mean_a, m2_a = left
        n_b, mean_b, m2_b = right
        n = n_a + n_b
        delta = mean_b - mean_a
        mean = mean_a + delta * n_b / n
        m2 = m2_a + m2_b + delta * delta * n_a * n_b / n
        return (n, mean, m2)

    def result(self, state: Moments) -> float | None:
        n, _, m2 = state
        # Rounding cannot make M2 negative (a sum of non-negative terms), but stay safe for sqrt.
        return self._finish(n, max(m2, 0.0))

    @abstractmethod
    def _finish(self, n: int, m2: float) -> float | None:
        """The SQL value of a group of `n` values whose M2 is `m2`."""

    def partial_exprs(self, argument: pl.Expr | None, prefix: str) -> list[pl.Expr]:
        assert argument is not None, f"{self.func} needs an argument"
        return [
            argument.count().alias(f"{prefix}n"),
            argument.mean().alias(f"{prefix}mean"),
            # Polars' variance is computed around the group's mean, not from a sum of squares.
            (argument.var(ddof=0) * argument.count()).alias(f"{prefix}m2"),
        ]

    def states_from_frame(self, frame: pl.DataFrame, prefix: str) -> list[Moments]:
        counts = frame.get_column(f"{prefix}n").to_list()
        means = frame.get_column(f"{prefix}mean").to_list()
        m2s = frame.get_column(f"{prefix}m2").to_list()
        # A group whose values are all NULL has a NULL mean and M2: it is the empty state.
        return [
            (int(n), float(mean), float(m2)) if n else _EMPTY
            for n, mean, m2 in zip(counts, means, m2s, strict=True)
        ]

    def to_wire(self, state: Moments) -> Any:
        return [state[0], state[1], state[2]]

    def from_wire(self, wire: Any) -> Moments:
        return (int(wire[0]), float(wire[1]), float(wire[2]))


class VarPop(_Spread):
    """VAR_POP: M2 / n."""

    func = AggFunc.VAR_POP

    def _finish(self, n: int, m2: float) -> float | None:
        return m2 / n if n else None


class VarSamp(_Spread):
    """VAR_SAMP (and VARIANCE): M2 / (n - 1)."""

    func = AggFunc.VAR_SAMP

    def _finish(self, n: int, m2: float) -> float | None:
        return m2 / (n - 1) if n > 1 else None


class StddevPop(_Spread):
    """STDDEV_POP: the square root of VAR_POP."""

    func = AggFunc.STDDEV_POP

    def _finish(self, n: int, m2: float) -> float | None:
        return math.sqrt(m2 / n) if n else None


class StddevSamp(_Spread):
    """STDDEV_SAMP (and STDDEV): the square root of VAR_SAMP."""

    func = AggFunc.STDDEV_SAMP

    def _finish(self, n: int, m2: float) -> float | None:
        return math.sqrt(m2 / (n - 1)) if n > 1 else None

"""How exact each aggregate's result is: the error bound `explain` reports.

Derived from each aggregate's own constants (its sketch's size and published rank or relative
error), so the bound stays true when a sketch parameter changes; docs/semantics.md, "Every
aggregate function", states the same figures for readers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mars.aggregates.average import Average
from mars.aggregates.base import Aggregate
from mars.aggregates.frequent import TopK
from mars.aggregates.hll import LG_K, ApproxCountDistinct
from mars.aggregates.quantiles import RANK_ERROR, ApproxPercentile, ApproxPercentiles, K
from mars.aggregates.spread import StddevPop, StddevSamp, VarPop, VarSamp
from mars.aggregates.sum import Sum

# HyperLogLog's relative standard error, 1.04 / sqrt(2^lg_k), which [DataSketches]' HLL_8
# sketches meet (about 1.6 % at lg_k 12).
HLL_RELATIVE_STANDARD_ERROR = 1.04 / (2**LG_K) ** 0.5

_ROUNDING = (Average, VarPop, VarSamp, StddevPop, StddevSamp)


@dataclass(frozen=True, slots=True, kw_only=True)
class Accuracy:
    """`approximate`: whether the result may differ from the exact value by more than
    floating-point rounding; `bound` says by how much, in words."""

    approximate: bool
    bound: str


def accuracy(aggregate: Aggregate[Any]) -> Accuracy:
    """The error bound of `aggregate`'s result (one group of one window)."""
    if isinstance(aggregate, ApproxCountDistinct):
        return Accuracy(
            approximate=True,
            bound=f"HyperLogLog (lg_k {LG_K}): relative standard error "
            f"{HLL_RELATIVE_STANDARD_ERROR:.2%}",
        )
    if isinstance(aggregate, ApproxPercentile | ApproxPercentiles):
        return Accuracy(
            approximate=True,
            bound=f"KLL sketch (k {K}): exact up to {K} values per group; beyond, the value's "
            f"rank within {RANK_ERROR:.2%} of the fraction (99 % confidence)",
        )
    if isinstance(aggregate, TopK):
        return Accuracy(
            approximate=True,
            bound=f"Misra-Gries summary: exact up to {aggregate.capacity} distinct values per "
            f"group; beyond, each count at most n / {aggregate.capacity + 1} low",
        )
    if isinstance(aggregate, Sum):
        return Accuracy(approximate=False, bound="exact for integers; floats within rounding")
    if isinstance(aggregate, _ROUNDING):
        return Accuracy(approximate=False, bound="within floating-point rounding")
    return Accuracy(approximate=False, bound="exact")

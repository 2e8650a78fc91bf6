"""APPROX_COUNT_DISTINCT with an Apache DataSketches HyperLogLog sketch.

The state is the sketch's compact serialization (lg_k 12, HLL_8): the same bytes Spark's
`hll_sketch_agg(col, 12)` produces and `hll_union_agg` / `hll_sketch_estimate` read, so a
sketch built by the Spark backfill job merges with the mappers' sketches. Values are hashed the
way both libraries do for the types Spark accepts: integers as 64-bit longs, strings as UTF-8.
A union of sketches with the same lg_k equals the sketch of the union of the inputs, so
merging partials is exact with respect to the sketch.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import polars as pl
from datasketches import hll_sketch, hll_union, tgt_hll_type

from mars.aggregates.base import SketchAggregate
from mars.tasks.spec import AggFunc

LG_K = 12
HLL_TYPE = tgt_hll_type.HLL_8


def _update(sketch: hll_sketch, value: Any) -> None:
    if isinstance(value, bool):
        sketch.update(int(value))
    elif isinstance(value, int | float | str):
        sketch.update(value)
    elif isinstance(value, bytes):
        sketch.update(value.decode("utf-8", errors="surrogateescape"))
    else:
        sketch.update(repr(value))


def sketch_of(values: Iterable[Any]) -> bytes:
    """The compact sketch bytes of the non-null `values`."""
    sketch = hll_sketch(LG_K, HLL_TYPE)
    for value in values:
        if value is not None:
            _update(sketch, value)
    return bytes(sketch.serialize_compact())


class ApproxCountDistinct(SketchAggregate):
    """Approximate distinct count (relative standard error about 1.6% at lg_k 12)."""

    func = AggFunc.APPROX_COUNT_DISTINCT

    def initial(self) -> bytes:
        return sketch_of(())

    def add(self, state: bytes, value: Any) -> bytes:
        if value is None:
            return state
        sketch = hll_sketch.deserialize(state)
        _update(sketch, value)
        return bytes(sketch.serialize_compact())

    def merge(self, left: bytes, right: bytes) -> bytes:
        union = hll_union(LG_K)
        union.update(hll_sketch.deserialize(left))
        union.update(hll_sketch.deserialize(right))
        return bytes(union.get_result(HLL_TYPE).serialize_compact())

    def result(self, state: bytes) -> int:
        return round(float(hll_sketch.deserialize(state).get_estimate()))

    def partial_exprs(self, argument: pl.Expr | None, prefix: str) -> list[pl.Expr]:
        assert argument is not None, "APPROX_COUNT_DISTINCT needs an argument"
        # Deduplicate in Polars so Python only touches each distinct value of a group once.
        return [argument.drop_nulls().unique().alias(f"{prefix}set")]

    def states_from_frame(self, frame: pl.DataFrame, prefix: str) -> list[bytes]:
        return [sketch_of(values) for values in frame.get_column(f"{prefix}set").to_list()]

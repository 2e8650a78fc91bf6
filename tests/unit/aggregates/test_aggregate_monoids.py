"""Each aggregate is a monoid whose Polars batch form agrees with its scalar `add`."""

from __future__ import annotations

import math
from typing import Any

import polars as pl
import pytest
from datasketches import hll_sketch, hll_union, tgt_hll_type
from hypothesis import given, settings
from hypothesis import strategies as st

from mars.aggregates import (
    Aggregate,
    ApproxCountDistinct,
    Average,
    CountAll,
    CountDistinct,
    CountNonNull,
    Max,
    Min,
    Sum,
    decode_states,
    encode_states,
    msgpack_wire,
)

INT_AGGREGATES: list[Aggregate[Any]] = [
    CountAll(),
    CountNonNull(),
    Sum(),
    Min(),
    Max(),
    Average(),
    CountDistinct(),
]

values_st = st.lists(st.one_of(st.none(), st.integers(-(10**9), 10**9)), max_size=60)


def partial_via_polars(agg: Aggregate[Any], values: list[Any]) -> Any:
    """The partial state of `values` as computed vectorised by the engine (one group)."""
    frame = pl.DataFrame(
        {"g": [0] * len(values), "x": values}, schema={"g": pl.Int64, "x": pl.Int64}
    )
    if frame.height == 0:
        return agg.initial()
    out = frame.group_by("g").agg(agg.partial_exprs(pl.col("x"), "p_"))
    (state,) = agg.states_from_frame(out, "p_")
    return state


def split(values: list[Any], cuts: list[int]) -> list[list[Any]]:
    points = sorted({min(c, len(values)) for c in cuts})
    parts, start = [], 0
    for point in [*points, len(values)]:
        parts.append(values[start:point])
        start = point
    return parts


@pytest.mark.parametrize("agg", INT_AGGREGATES, ids=lambda a: type(a).__name__)
@settings(max_examples=60, deadline=None)
@given(values=values_st, cuts=st.lists(st.integers(0, 60), max_size=5), data=st.data())
def test_merging_partials_in_any_order_equals_aggregating_at_once(
    agg: Aggregate[Any], values: list[Any], cuts: list[int], data: st.DataObject
) -> None:
    whole = agg.fold(values)
    partials = [partial_via_polars(agg, part) for part in split(values, cuts)]
    order = data.draw(st.permutations(range(len(partials))))
    merged = agg.initial()
    for i in order:
        merged = agg.merge(merged, partials[i])
    assert merged == whole
    assert agg.result(merged) == agg.result(whole)


@pytest.mark.parametrize("agg", INT_AGGREGATES, ids=lambda a: type(a).__name__)
@given(values=values_st)
def test_initial_is_the_identity(agg: Aggregate[Any], values: list[Any]) -> None:
    state = agg.fold(values)
    assert agg.merge(agg.initial(), state) == state
    assert agg.merge(state, agg.initial()) == state


@pytest.mark.parametrize("agg", INT_AGGREGATES, ids=lambda a: type(a).__name__)
@given(values=values_st)
def test_encoding_round_trips(agg: Aggregate[Any], values: list[Any]) -> None:
    state = agg.fold(values)
    aggregates, states = decode_states(encode_states([agg], [state]))
    assert type(aggregates[0]) is type(agg)
    assert states == [state]


def test_sql_null_semantics() -> None:
    nothing: list[Any] = [None, None]
    assert CountAll().result(CountAll().fold(nothing)) == 2
    assert CountNonNull().result(CountNonNull().fold(nothing)) == 0
    assert Sum().result(Sum().fold(nothing)) is None
    assert Min().result(Min().fold(nothing)) is None
    assert Max().result(Max().fold(nothing)) is None
    assert Average().result(Average().fold(nothing)) is None
    assert CountDistinct().result(CountDistinct().fold(nothing)) == 0
    assert partial_via_polars(Sum(), nothing) is None
    assert partial_via_polars(Average(), [None, 3, 4]) == (7, 2)
    assert Average().result((7, 2)) == 3.5


def test_min_max_merge_across_types_never_raises() -> None:
    assert Min().merge(3, "a") == 3
    assert Max().merge(3, "a") == "a"
    assert Min().merge("b", "a") == "a"


def test_float_sum_and_avg_within_rounding() -> None:
    values = [0.1, 0.2, None, 0.3]
    merged = Sum().merge(partial_via_float(Sum(), values[:2]), partial_via_float(Sum(), values[2:]))
    assert math.isclose(merged, 0.6)
    avg = Average().merge(
        partial_via_float(Average(), values[:1]), partial_via_float(Average(), values[1:])
    )
    assert math.isclose(Average().result(avg), 0.2)


def partial_via_float(agg: Aggregate[Any], values: list[Any]) -> Any:
    frame = pl.DataFrame(
        {"g": [0] * len(values), "x": values}, schema={"g": pl.Int64, "x": pl.Float64}
    )
    out = frame.group_by("g").agg(agg.partial_exprs(pl.col("x"), "p_"))
    return agg.states_from_frame(out, "p_")[0]


def canonical_estimate(state: bytes) -> float:
    """The estimate after a union pass, which ignores the order-dependent HIP estimator."""
    union = hll_union(12)
    union.update(hll_sketch.deserialize(state))
    return float(union.get_result(tgt_hll_type.HLL_8).get_estimate())


hll_values_st = st.lists(
    st.one_of(st.none(), st.integers(-(10**6), 10**6), st.text(max_size=6)), max_size=300
)


@settings(max_examples=40, deadline=None)
@given(values=hll_values_st, cuts=st.lists(st.integers(0, 300), max_size=5), data=st.data())
def test_hll_merged_partials_equal_the_sketch_of_everything(
    values: list[Any], cuts: list[int], data: st.DataObject
) -> None:
    agg = ApproxCountDistinct()
    partials = []
    for part in split(values, cuts):
        ints = [v for v in part if isinstance(v, int)]
        texts = [v for v in part if isinstance(v, str)]
        partials.append(agg.merge(partial_via_polars(agg, ints), partial_of_text(agg, texts)))
    order = data.draw(st.permutations(range(len(partials))))
    merged = agg.initial()
    for i in order:
        merged = agg.merge(merged, partials[i])
    assert canonical_estimate(merged) == canonical_estimate(agg.fold(values))
    distinct = len({v for v in values if v is not None})
    assert abs(agg.result(merged) - distinct) <= max(2, 0.05 * distinct)


def partial_of_text(agg: Aggregate[Any], values: list[str]) -> Any:
    frame = pl.DataFrame(
        {"g": [0] * len(values), "x": values}, schema={"g": pl.Int64, "x": pl.String}
    )
    if frame.height == 0:
        return agg.initial()
    out = frame.group_by("g").agg(agg.partial_exprs(pl.col("x"), "p_"))
    return agg.states_from_frame(out, "p_")[0]


def test_hll_large_cardinality_within_error_bound() -> None:
    agg = ApproxCountDistinct()
    left = partial_via_polars(agg, list(range(0, 60_000)))
    right = partial_via_polars(agg, list(range(40_000, 100_000)))
    estimate = agg.result(agg.merge(left, right))
    assert abs(estimate - 100_000) < 100_000 * 0.05


def test_hll_state_is_a_datasketches_compact_sketch_with_lg_k_12() -> None:
    state = ApproxCountDistinct().fold(["a", "b", 1, 2, "a"])
    sketch = hll_sketch.deserialize(state)
    assert sketch.lg_config_k == 12
    assert sketch.tgt_type == tgt_hll_type.HLL_8
    fresh = hll_sketch(12, tgt_hll_type.HLL_8)
    for value in ["a", "b", 1, 2]:
        fresh.update(value)
    assert state == bytes(fresh.serialize_compact())
    assert round(sketch.get_estimate()) == 4
    _, (decoded,) = decode_states(encode_states([ApproxCountDistinct()], [state]))
    assert decoded == state


def test_decode_rejects_unknown_version() -> None:
    import msgspec

    from mars.aggregates import PartialEncodingError

    with pytest.raises(PartialEncodingError):
        decode_states(msgspec.msgpack.encode([99, ["count"], [1]]))
    with pytest.raises(PartialEncodingError):
        decode_states(b"\xc1garbage")


def test_count_distinct_encodes_a_set_holding_nan_to_the_same_bytes() -> None:
    """A NaN hashes by its identity, so sets of the same values iterate in different orders;
    their wires must still be one (they compared unequal, flakily, in the test below)."""
    agg = CountDistinct()
    sets = [frozenset([0.5, float("nan"), 0.0, -1.0, float("inf")]) for _ in range(200)]
    assert len({msgpack_wire.encode(agg.to_wire(state)) for state in sets}) == 1


@settings(max_examples=200, deadline=None)
@given(
    st.one_of(
        st.lists(st.tuples(st.integers(0, 5), st.none() | st.integers(-(2**63), 2**63 - 1))),
        st.lists(st.tuples(st.integers(0, 5), st.none() | st.text(max_size=4))),
        st.lists(st.tuples(st.integers(0, 5), st.none() | st.floats(allow_nan=True))),
    )
)
def test_count_distinct_wires_from_a_frame_are_each_state_sorted(
    rows: list[tuple[int, Any]],
) -> None:
    """The wires of a grouped frame encode as `to_wire` of each group's state (the reference),
    whether Polars sorts them (integers, strings) or Python does (floats; NaN compared by its
    bytes)."""
    agg = CountDistinct()
    frame = pl.DataFrame(rows, schema=["g", "x"], orient="row")
    grouped = frame.group_by("g", maintain_order=True).agg(agg.partial_exprs(pl.col("x"), "p_"))
    reference = [agg.to_wire(state) for state in agg.states_from_frame(grouped, "p_")]
    assert msgpack_wire.encode(agg.wires_from_frame(grouped, "p_")) == msgpack_wire.encode(
        reference
    )

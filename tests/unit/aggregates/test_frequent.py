"""TOPK: a mergeable Misra-Gries summary, exact below its capacity and within n / (m + 1)
per count above it, whose values keep their type."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mars.aggregates import TopK, aggregate_for, decode_states, encode_states, wire_name
from mars.aggregates.extremum import sort_key
from mars.aggregates.frequent import MAX_K, Summary, capacity
from mars.tasks.spec import AggFunc

ints_st = st.lists(st.one_of(st.none(), st.integers(-5, 5)), max_size=60)
strings_st = st.lists(
    st.one_of(st.none(), st.sampled_from(["a", "b", "", "é", "ccc"])), max_size=60
)


def exact_top(values: list[Any], k: int) -> list[Any] | None:
    counts = Counter(v for v in values if v is not None)
    if not counts:
        return None
    ranked = sorted(counts.items(), key=lambda item: (-item[1], sort_key(item[0])))
    return [value for value, _ in ranked[:k]]


def partials_via_polars(agg: TopK, groups: list[list[Any]], dtype: Any) -> list[Summary]:
    rows = [(g, v) for g, values in enumerate(groups) for v in (values or [None])]
    frame = pl.DataFrame(
        {"g": [g for g, _ in rows], "x": [v for _, v in rows]},
        schema={"g": pl.Int64, "x": dtype},
    )
    out = frame.group_by("g").agg(agg.partial_exprs(pl.col("x"), "p_")).sort("g")
    return agg.states_from_frame(out, "p_")


def merged(agg: TopK, values: list[Any], cuts: list[int], dtype: Any) -> Summary:
    points = sorted({min(c, len(values)) for c in cuts})
    bounds = list(zip([0, *points], [*points, len(values)], strict=True))
    state = agg.initial()
    for part in partials_via_polars(agg, [values[a:b] for a, b in bounds], dtype):
        state = agg.merge(state, part)
    return state


@settings(max_examples=80, deadline=None)
@given(
    values=st.one_of(
        ints_st.map(lambda v: (v, pl.Int64)), strings_st.map(lambda v: (v, pl.String))
    ),
    cuts=st.lists(st.integers(0, 60), max_size=4),
    k=st.integers(1, 6),
)
def test_below_capacity_the_top_k_is_exact(
    values: tuple[list[Any], Any], cuts: list[int], k: int
) -> None:
    items, dtype = values
    agg = TopK(k)
    state = merged(agg, items, cuts, dtype)
    assert agg.result(state) == exact_top(items, k)
    assert dict(state[1]) == Counter(v for v in items if v is not None)  # every count exact


@settings(max_examples=60, deadline=None)
@given(a=ints_st, b=ints_st, c=ints_st)
def test_merge_is_associative_and_commutative_below_capacity(
    a: list[Any], b: list[Any], c: list[Any]
) -> None:
    agg = TopK(3)
    x, y, z = agg.fold(a), agg.fold(b), agg.fold(c)
    assert agg.merge(x, y) == agg.merge(y, x)
    assert agg.merge(agg.merge(x, y), z) == agg.merge(x, agg.merge(y, z)) == agg.fold(a + b + c)


def test_merge_is_commutative_above_capacity() -> None:
    rng = np.random.default_rng(3)
    agg = TopK(5)
    x = agg.fold(rng.integers(0, 1000, 3000).tolist())
    y = agg.fold(rng.integers(0, 1000, 3000).tolist())
    assert len(x[1]) <= agg.capacity
    assert agg.merge(x, y) == agg.merge(y, x)


@pytest.mark.parametrize("distribution", ["zipf", "uniform-with-heavy-hitters"])
def test_above_capacity_counts_are_within_n_over_m_plus_1(distribution: str) -> None:
    rng = np.random.default_rng(5)
    n = 100_000
    if distribution == "zipf":
        data = rng.zipf(1.3, n) % 5000
    else:
        data = np.where(rng.random(n) < 0.3, rng.integers(0, 5, n), rng.integers(5, 20_000, n))
    values = data.tolist()
    truth = Counter(values)
    k = 10
    agg = TopK(k)
    state = agg.initial()
    for part in np.array_split(np.array(values), 17):  # 17 batches, merged in order
        (summary,) = partials_via_polars(agg, [part.tolist()], pl.Int64)
        state = agg.merge(state, summary)
    n_seen, counts = state
    bound = n / (agg.capacity + 1)
    assert n_seen == n and len(counts) <= agg.capacity
    assert 0 <= agg.max_error(state) <= bound
    for value, count in counts.items():
        assert truth[value] - bound <= count <= truth[value]
    for value, count in truth.items():  # a value more frequent than the bound is kept
        if count > bound:
            assert value in counts
    result = agg.result(state)
    assert result is not None and len(result) == k
    kth = sorted(truth.values(), reverse=True)[k - 1]
    for value in result:  # each returned value is about as frequent as the true k-th
        assert truth[value] >= kth - bound


def test_values_keep_their_type_through_the_wire() -> None:
    for values, dtype in [
        ([3, 3, 1, 2, 2, 2], pl.Int64),
        (["x", "y", "y"], pl.String),
        ([0.5, 0.5, 1.25], pl.Float64),
        ([True, False, True], pl.Boolean),
    ]:
        agg = TopK(2)
        (state,) = partials_via_polars(agg, [values], dtype)
        aggregates, states = decode_states(encode_states([agg], [state]))
        assert type(aggregates[0]) is TopK and aggregates[0].parameters == (2.0,)
        assert states == [state]
        result = agg.result(states[0])
        assert result == exact_top(values, 2)
        assert all(type(v) is type(values[0]) for v in result or [])
    assert wire_name(TopK(7)) == "topk:7.0"


def test_ties_are_broken_by_value_and_nulls_ignored() -> None:
    agg = TopK(3)
    assert agg.result(agg.fold(["b", None, "a", "c", "b", "a", None, None])) == ["a", "b", "c"]
    assert agg.result(agg.fold([None, None])) is None
    assert agg.result(agg.fold([5, 2, 9])) == [2, 5, 9]


def test_polars_partials_of_many_groups_stay_aligned() -> None:
    agg = TopK(1)
    states = partials_via_polars(agg, [["x", "y", "y"], [], [None], ["z"]], pl.String)
    assert [agg.result(s) for s in states] == [["y"], None, None, ["z"]]


@pytest.mark.parametrize("parameters", [(0.0,), (-1.0,), (2.5,), (MAX_K + 1.0,), (), (1.0, 2.0)])
def test_k_must_be_a_whole_number_from_1_to_max(parameters: tuple[float, ...]) -> None:
    with pytest.raises(ValueError, match="TOPK"):
        aggregate_for(AggFunc.TOPK, has_argument=True, parameters=parameters)


def test_registered_with_its_capacity() -> None:
    agg = aggregate_for(AggFunc.TOPK, has_argument=True, parameters=(5.0,))
    assert isinstance(agg, TopK) and agg.k == 5 and not agg.numeric_argument
    assert capacity(5) == 256 and capacity(MAX_K) == 4 * MAX_K

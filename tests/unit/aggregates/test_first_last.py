"""FIRST / LAST: a monoid over (event time, value) whose result does not depend on how records
sharing a timestamp are split into partials, and agrees with a DuckDB query of the same rule."""

from __future__ import annotations

import itertools
from typing import Any

import duckdb
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mars.aggregates import First, Last, aggregate_for, decode_states, encode_states
from mars.aggregates.base import timed_input
from mars.aggregates.first_last import Timed
from mars.tasks.spec import AggFunc

AT_TIME = [First(), Last()]
ids = {"ids": lambda a: type(a).__name__}

# Few distinct times: most values share their timestamp with others (as real data does).
times_st = st.integers(-3, 3)
ints_st = st.lists(st.tuples(times_st, st.one_of(st.none(), st.integers(-5, 5))), max_size=30)
texts_st = st.lists(
    st.tuples(times_st, st.one_of(st.none(), st.text("abé", max_size=2))), max_size=30
)
pairs_st = st.one_of(ints_st, texts_st)


def expected(agg: First | Last, pairs: list[tuple[int, Any]]) -> Any:
    """The rule, written plainly: the earliest (latest) time among non-NULL values, then the
    smallest (largest) value at it."""
    present = [(t, v) for t, v in pairs if v is not None]
    if not present:
        return None
    pick = max if isinstance(agg, Last) else min
    edge = pick(t for t, _ in present)
    return pick(v for t, v in present if t == edge)


def partial_via_polars(agg: First | Last, pairs: list[tuple[int, Any]], dtype: Any) -> Timed:
    """The state the engine computes for one group of `pairs` (as `Preaggregator` calls it)."""
    frame = pl.DataFrame(
        {"g": [0] * len(pairs), "t": [t for t, _ in pairs], "x": [v for _, v in pairs]},
        schema={"g": pl.Int64, "t": pl.Int64, "x": dtype},
    )
    if frame.height == 0:
        return agg.initial()
    argument = timed_input(pl.col("t"), pl.col("x"))
    out = frame.group_by("g").agg(agg.partial_exprs(argument, "p_"))
    (state,) = agg.states_from_frame(out, "p_")
    return state


def dtype_of(pairs: list[tuple[int, Any]]) -> Any:
    return pl.String if any(isinstance(v, str) for _, v in pairs) else pl.Int64


@pytest.mark.parametrize("agg", AT_TIME, **ids)
@settings(max_examples=150, deadline=None)
@given(a=pairs_st, b=pairs_st, c=pairs_st)
def test_merge_is_associative_and_commutative(
    agg: First | Last, a: list[Any], b: list[Any], c: list[Any]
) -> None:
    sa, sb, sc = agg.fold(a), agg.fold(b), agg.fold(c)
    assert agg.merge(sa, sb) == agg.merge(sb, sa)
    assert agg.merge(agg.merge(sa, sb), sc) == agg.merge(sa, agg.merge(sb, sc))
    assert agg.merge(agg.initial(), sa) == sa == agg.merge(sa, agg.initial())


@pytest.mark.parametrize("agg", AT_TIME, **ids)
@settings(max_examples=150, deadline=None)
@given(pairs=pairs_st, cuts=st.lists(st.integers(0, 30), max_size=4))
def test_any_split_into_partials_gives_the_rule(
    agg: First | Last, pairs: list[tuple[int, Any]], cuts: list[int]
) -> None:
    """Partials from Polars over arbitrary pieces, merged in any order, give the plain rule."""
    bounds = sorted({0, len(pairs), *(min(c, len(pairs)) for c in cuts)})
    pieces = [pairs[lo:hi] for lo, hi in itertools.pairwise(bounds)]
    dtype = dtype_of(pairs)
    partials = [partial_via_polars(agg, piece, dtype) for piece in pieces]
    for piece, partial in zip(pieces, partials, strict=True):
        assert partial == agg.fold(piece)
    for order in (partials, partials[::-1]):
        state = agg.initial()
        for partial in order:
            state = agg.merge(state, partial)
        assert agg.result(state) == expected(agg, pairs)


@pytest.mark.parametrize("agg", AT_TIME, **ids)
@settings(max_examples=100, deadline=None)
@given(pairs=pairs_st)
def test_states_survive_the_wire(agg: First | Last, pairs: list[tuple[int, Any]]) -> None:
    state = agg.fold(pairs)
    aggregates, states = decode_states(encode_states([agg], [state]))
    assert type(aggregates[0]) is type(agg)
    assert states == [state]


@pytest.mark.parametrize("agg", AT_TIME, **ids)
@settings(max_examples=60, deadline=None)
@given(pairs=pairs_st)
def test_agrees_with_duckdb_on_a_struct_of_time_and_value(
    agg: First | Last, pairs: list[tuple[int, Any]]
) -> None:
    """The differential test's oracle expression for the same rule."""
    extreme = "max" if isinstance(agg, Last) else "min"
    kind = "VARCHAR" if dtype_of(pairs) == pl.String else "BIGINT"
    con = duckdb.connect()
    try:
        con.execute(f"CREATE TABLE r (ts BIGINT, v {kind})")
        if pairs:
            con.executemany("INSERT INTO r VALUES (?, ?)", pairs)
        (want,) = con.execute(
            f"SELECT ({extreme}({{'t': ts, 'v': v}}) FILTER (WHERE v IS NOT NULL)).v FROM r"
        ).fetchone() or (None,)
    finally:
        con.close()
    assert agg.result(agg.fold(pairs)) == want == expected(agg, pairs)


def test_ties_and_nulls() -> None:
    pairs = [(5, "b"), (1, None), (2, "z"), (2, "a"), (5, "c"), (6, None)]
    assert First().result(First().fold(pairs)) == "a"  # earliest valued time 2, smallest
    assert Last().result(Last().fold(pairs)) == "c"  # latest valued time 5, largest
    assert First().result(First().fold([(1, None)])) is None
    assert Last().result(Last().initial()) is None


def test_equal_numbers_of_different_types_still_merge_commutatively() -> None:
    # 1 and 1.0 compare equal, but they are different results: the type breaks the tie.
    for agg in AT_TIME:
        assert agg.merge((0, 1), (0, 1.0)) == agg.merge((0, 1.0), (0, 1))
        assert agg.merge((0, True), (0, 1)) == agg.merge((0, 1), (0, True))


def test_a_column_of_nulls_gives_the_empty_state() -> None:
    for agg in AT_TIME:
        assert partial_via_polars(agg, [(1, None), (2, None)], pl.Null) is None


def test_registry_builds_them_and_they_take_no_parameters() -> None:
    assert isinstance(aggregate_for(AggFunc.FIRST, has_argument=True), First)
    assert isinstance(aggregate_for(AggFunc.LAST, has_argument=True), Last)
    with pytest.raises(ValueError, match="takes no parameters"):
        aggregate_for(AggFunc.FIRST, has_argument=True, parameters=(1.0,))
    with pytest.raises(ValueError, match="needs an argument"):
        aggregate_for(AggFunc.LAST, has_argument=False)

"""VAR_POP / VAR_SAMP / STDDEV_POP / STDDEV_SAMP: a monoid over (count, mean, M2) whose
merged partials agree with DuckDB and stay precise around large offsets."""

from __future__ import annotations

import math
import statistics
from fractions import Fraction
from typing import Any

import duckdb
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mars.aggregates import (
    StddevPop,
    StddevSamp,
    VarPop,
    VarSamp,
    aggregate_for,
    decode_states,
    encode_states,
)
from mars.aggregates.spread import Moments
from mars.tasks.spec import AggFunc

SPREADS = [VarPop(), VarSamp(), StddevPop(), StddevSamp()]
ORACLE = {
    VarPop: "var_pop",
    VarSamp: "var_samp",
    StddevPop: "stddev_pop",
    StddevSamp: "stddev_samp",
}
ids = {"ids": lambda a: type(a).__name__}

floats = st.floats(-1e6, 1e6, allow_nan=False)
values_st = st.lists(st.one_of(st.none(), floats, st.integers(-(10**6), 10**6)), max_size=40)
# Large offsets with small noise: a (sum, sum of squares) state loses every digit here.
offset_st = st.lists(st.floats(-1.0, 1.0).map(lambda e: 1e9 + e), min_size=2, max_size=40)


def close(got: float | None, want: float | None, rel: float = 1e-9) -> bool:
    if got is None or want is None:
        return got is None and want is None
    return math.isclose(got, want, rel_tol=rel, abs_tol=1e-9)


def same_moments(left: Moments, right: Moments, rel: float = 1e-9) -> bool:
    """Equal count; mean and M2 equal up to rounding (M2 against the scale of the values)."""
    scale = max(abs(left[1]), abs(right[1]), 1.0)
    return (
        left[0] == right[0]
        and math.isclose(left[1], right[1], rel_tol=rel, abs_tol=1e-9)
        and math.isclose(left[2], right[2], rel_tol=rel, abs_tol=rel * scale * scale)
    )


def partial_via_polars(values: list[Any]) -> Moments:
    """The state the engine computes for one group of `values` (float column)."""
    frame = pl.DataFrame(
        {"g": [0] * len(values), "x": values}, schema={"g": pl.Int64, "x": pl.Float64}
    )
    if frame.height == 0:
        return VarPop().initial()
    out = frame.group_by("g").agg(VarPop().partial_exprs(pl.col("x"), "p_"))
    (state,) = VarPop().states_from_frame(out, "p_")
    return state


def exact_m2(values: list[Any]) -> Fraction:
    present = [Fraction(v) for v in values if v is not None]
    mean = sum(present, Fraction(0)) / len(present)
    return sum(((v - mean) ** 2 for v in present), Fraction(0))


@settings(max_examples=80, deadline=None)
@given(a=values_st, b=values_st, c=values_st)
def test_merge_is_associative_and_commutative(a: list[Any], b: list[Any], c: list[Any]) -> None:
    agg = VarPop()
    x, y, z = agg.fold(a), agg.fold(b), agg.fold(c)
    assert agg.merge(x, y) == agg.merge(y, x)  # one operand order: bitwise equal
    assert same_moments(agg.merge(agg.merge(x, y), z), agg.merge(x, agg.merge(y, z)))


@given(values=values_st)
def test_initial_is_the_identity(values: list[Any]) -> None:
    agg = VarSamp()
    state = agg.fold(values)
    assert agg.merge(agg.initial(), state) == state
    assert agg.merge(state, agg.initial()) == state


@pytest.mark.parametrize("agg", SPREADS, **ids)
@given(values=values_st)
def test_encoding_round_trips(agg: Any, values: list[Any]) -> None:
    state = agg.fold(values)
    aggregates, states = decode_states(encode_states([agg], [state]))
    assert type(aggregates[0]) is type(agg)
    assert states == [state]


@settings(max_examples=80, deadline=None)
@given(values=values_st)
def test_polars_partial_equals_fold(values: list[Any]) -> None:
    as_floats = [None if v is None else float(v) for v in values]
    assert same_moments(partial_via_polars(as_floats), VarPop().fold(values))


def test_polars_partial_of_null_and_single_value_groups() -> None:
    frame = pl.DataFrame(
        {"g": [0, 0, 1, 1, 2], "x": [None, None, None, 4, 7]},
        schema={"g": pl.Int64, "x": pl.Int64},
    )
    out = frame.group_by("g").agg(VarPop().partial_exprs(pl.col("x"), "p_")).sort("g")
    assert VarPop().states_from_frame(out, "p_") == [(0, 0.0, 0.0), (1, 4.0, 0.0), (1, 7.0, 0.0)]


def duckdb_result(func: str, values: list[Any]) -> float | None:
    rows = [(v,) for v in values]
    con = duckdb.connect()
    try:
        con.execute("CREATE TABLE t (x DOUBLE)")
        if rows:
            con.executemany("INSERT INTO t VALUES (?)", rows)
        row = con.execute(f"SELECT {func}(x) FROM t").fetchone()
    finally:
        con.close()
    assert row is not None
    result: float | None = row[0]
    return result


def merged_partials(values: list[Any], cuts: list[int]) -> Moments:
    agg = VarPop()
    points = sorted({min(c, len(values)) for c in cuts})
    state, start = agg.initial(), 0
    for point in [*points, len(values)]:
        state = agg.merge(state, partial_via_polars(values[start:point]))
        start = point
    return state


@pytest.mark.parametrize("agg", SPREADS, **ids)
@settings(max_examples=30, deadline=None)
@given(values=values_st, cuts=st.lists(st.integers(0, 40), max_size=4))
def test_results_equal_duckdb(agg: Any, values: list[Any], cuts: list[int]) -> None:
    as_floats = [None if v is None else float(v) for v in values]
    got = agg.result(merged_partials(as_floats, cuts))
    want = duckdb_result(ORACLE[type(agg)], as_floats)
    # DuckDB's own streaming rounding: exact M2 can be 0 where it reports 1e-10.
    assert close(got, want, rel=1e-7) or (want is not None and abs(got - want) < 1e-6)


@settings(max_examples=60, deadline=None)
@given(values=offset_st, cuts=st.lists(st.integers(0, 40), max_size=4))
def test_merged_partials_stay_precise_around_a_large_offset(
    values: list[float], cuts: list[int]
) -> None:
    m2 = merged_partials(values, cuts)[2]
    exact = float(exact_m2(values))
    # Each value carries up to half an ulp of 1e9 (6e-8): M2 is known to about that much per
    # value around the mean; a sum of squares would be off by ~1e18 * 1e-16 = 100.
    bound = 1e-6 * len(values) * (1 + math.sqrt(exact))
    assert abs(m2 - exact) <= bound
    # The sample variance is M2 / (n - 1), so it inherits that bound divided by n - 1 (a
    # relative bound would not hold: the variance of values 0.06 apart is about 1e-3).
    got = VarSamp().result((len(values), 0.0, m2))
    assert got is not None
    assert abs(got - statistics.variance(values)) <= bound / (len(values) - 1)


def test_results_of_a_known_group() -> None:
    state = merged_partials([2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0], [3, 5])
    assert VarPop().result(state) == pytest.approx(4.0)
    assert StddevPop().result(state) == pytest.approx(2.0)
    assert VarSamp().result(state) == pytest.approx(32 / 7)
    assert StddevSamp().result(state) == pytest.approx(math.sqrt(32 / 7))


def test_sql_null_semantics() -> None:
    for agg in SPREADS:
        assert agg.result(agg.fold([None, None])) is None
    one = VarPop().fold([None, 3])
    assert VarPop().result(one) == 0.0
    assert StddevPop().result(one) == 0.0
    assert VarSamp().result(one) is None
    assert StddevSamp().result(one) is None


def test_registered_by_func_and_numeric() -> None:
    for func, kind in [
        (AggFunc.VAR_POP, VarPop),
        (AggFunc.VAR_SAMP, VarSamp),
        (AggFunc.STDDEV_POP, StddevPop),
        (AggFunc.STDDEV_SAMP, StddevSamp),
    ]:
        agg = aggregate_for(func, has_argument=True)
        assert type(agg) is kind
        assert agg.numeric_argument

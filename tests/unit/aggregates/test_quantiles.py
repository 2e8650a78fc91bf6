"""APPROX_PERCENTILE: a KLL sketch whose merged partials are exact for groups of at most
k = 200 values and within the stated rank error beyond, on uniform and skewed data."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mars.aggregates import (
    ApproxPercentile,
    ApproxPercentiles,
    aggregate_for,
    decode_states,
    encode_states,
    wire_name,
)
from mars.aggregates.quantiles import RANK_ERROR, K
from mars.tasks.spec import AggFunc

FRACTIONS = (0.0, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 1.0)

values_st = st.lists(
    st.one_of(st.none(), st.floats(-1e6, 1e6, allow_nan=False), st.integers(-50, 50)),
    max_size=60,
)


def exact(values: list[Any], p: float) -> float:
    """The smallest v with at least p * n values <= v (numpy's inverted_cdf)."""
    present = np.array([v for v in values if v is not None], dtype=np.float64)
    return float(np.quantile(present, p, method="inverted_cdf"))


def within_rank(sorted_values: np.ndarray[Any, Any], got: float, p: float, eps: float) -> bool:
    """Whether `got`'s rank in `sorted_values` is within `eps` of `p`: the fraction of values
    below it is at most p + eps, the fraction at or below it at least p - eps."""
    n = len(sorted_values)
    below = np.searchsorted(sorted_values, got, side="left") / n
    at_or_below = np.searchsorted(sorted_values, got, side="right") / n
    return bool(below <= p + eps and at_or_below >= p - eps)


def partials_via_polars(
    agg: ApproxPercentile, groups: list[list[Any]], dtype: Any = pl.Float64
) -> list[bytes]:
    """The states the engine computes for several groups in one batch (empty groups too)."""
    rows = [(g, v) for g, values in enumerate(groups) for v in (values or [None])]
    frame = pl.DataFrame(
        {"g": [g for g, _ in rows], "x": [v for _, v in rows]},
        schema={"g": pl.Int64, "x": dtype},
    )
    out = frame.group_by("g").agg(agg.partial_exprs(pl.col("x"), "p_")).sort("g")
    return agg.states_from_frame(out, "p_")


def merged(agg: ApproxPercentile, values: list[Any], cuts: list[int]) -> bytes:
    """The state of `values` cut into batches at `cuts`, each pre-aggregated, then merged."""
    points = sorted({min(c, len(values)) for c in cuts})
    bounds = list(zip([0, *points], [*points, len(values)], strict=True))
    state = agg.initial()
    for part in partials_via_polars(agg, [values[a:b] for a, b in bounds]):
        state = agg.merge(state, part)
    return state


@settings(max_examples=80, deadline=None)
@given(
    values=values_st, cuts=st.lists(st.integers(0, 60), max_size=4), p=st.sampled_from(FRACTIONS)
)
def test_a_group_of_at_most_k_values_is_exact(values: list[Any], cuts: list[int], p: float) -> None:
    as_floats = [None if v is None else float(v) for v in values]
    agg = ApproxPercentile((p,))
    got = agg.result(merged(agg, as_floats, cuts))
    if all(v is None for v in values):
        assert got is None
    else:
        assert got == exact(as_floats, p)


@settings(max_examples=60, deadline=None)
@given(a=values_st, b=values_st, c=values_st)
def test_merge_is_associative_and_commutative_below_k(
    a: list[Any], b: list[Any], c: list[Any]
) -> None:
    agg = ApproxPercentiles(FRACTIONS)
    x, y, z = agg.fold(a), agg.fold(b), agg.fold(c)
    assert agg.result(agg.merge(x, y)) == agg.result(agg.merge(y, x))
    left = agg.result(agg.merge(agg.merge(x, y), z))
    assert left == agg.result(agg.merge(x, agg.merge(y, z)))
    assert left == agg.result(agg.fold(a + b + c))


def test_merge_orders_agree_within_the_rank_error_beyond_k() -> None:
    rng = np.random.default_rng(7)
    parts = [rng.normal(size=int(rng.integers(50, 3000))) for _ in range(6)]
    agg = ApproxPercentiles(FRACTIONS)
    states = partials_via_polars(agg, [list(p) for p in parts])
    forward = states[0]
    for state in states[1:]:
        forward = agg.merge(forward, state)
    backward = states[-1]
    for state in reversed(states[:-1]):
        backward = agg.merge(state, backward)
    pairs = agg.merge(
        agg.merge(agg.merge(states[0], states[1]), agg.merge(states[2], states[3])),
        agg.merge(states[4], states[5]),
    )
    everything = np.sort(np.concatenate(parts))
    for state in (forward, backward, pairs):
        result = agg.result(state)
        assert result is not None
        for got, p in zip(result, FRACTIONS, strict=True):
            assert within_rank(everything, got, p, RANK_ERROR)


def skewed(rng: np.random.Generator, n: int) -> np.ndarray[Any, Any]:
    """Long-tailed latencies with heavy ties: half the values are one of 5 numbers."""
    tail = rng.lognormal(mean=3.0, sigma=1.5, size=n - n // 2)
    ties = rng.choice([1.0, 2.0, 5.0, 10.0, 1000.0], size=n // 2, p=[0.5, 0.2, 0.2, 0.05, 0.05])
    out = np.concatenate([tail, ties])
    rng.shuffle(out)
    return out


@pytest.mark.parametrize("kind", ["uniform", "normal", "skewed", "integers"])
def test_large_groups_are_within_the_rank_error(kind: str) -> None:
    rng = np.random.default_rng(11)
    n = 100_000
    data = {
        "uniform": lambda: rng.uniform(-1e9, 1e9, n),
        "normal": lambda: rng.normal(1e9, 1.0, n),
        "skewed": lambda: skewed(rng, n),
        "integers": lambda: rng.integers(0, 50, n).astype(np.float64),
    }[kind]()
    agg = ApproxPercentiles((*FRACTIONS, 0.999, 0.333))
    # Ten batches of a few groups each: the group of interest is cut across all of them.
    batches = np.array_split(data, 10)
    state = agg.initial()
    for batch in batches:
        (part, _) = partials_via_polars(agg, [list(batch), [1.0, 2.0]])
        state = agg.merge(state, part)
    result = agg.result(state)
    assert result is not None
    ordered = np.sort(data)
    for got, p in zip(result, agg.parameters, strict=True):
        assert within_rank(ordered, got, p, RANK_ERROR), (kind, p, got)
        assert got in set(data.tolist()) or got in (ordered[0], ordered[-1])
    assert result[0] == ordered[0] and result[FRACTIONS.index(1.0)] == ordered[-1]


def test_the_stated_error_is_datasketches_k_200() -> None:
    assert K == 200
    assert pytest.approx(0.0133, abs=1e-4) == RANK_ERROR


@given(values=values_st)
def test_initial_is_the_identity(values: list[Any]) -> None:
    agg = ApproxPercentile((0.5,))
    state = agg.fold(values)
    assert agg.merge(agg.initial(), state) == state
    assert agg.merge(state, agg.initial()) == state


@given(values=values_st)
def test_encoding_round_trips_with_the_fractions(values: list[Any]) -> None:
    for agg in (ApproxPercentile((0.99,)), ApproxPercentiles((0.5, 0.9, 0.99))):
        state = agg.fold(values)
        aggregates, states = decode_states(encode_states([agg], [state]))
        assert type(aggregates[0]) is type(agg)
        assert aggregates[0].parameters == agg.parameters
        assert states == [state]
    assert wire_name(ApproxPercentiles((0.5, 0.99))) == "approx_percentiles:0.5,0.99"


def test_polars_partials_of_many_groups_stay_aligned() -> None:
    agg = ApproxPercentiles((0.0, 1.0))
    groups: list[list[Any]] = [[3, 1, 2], [], [None, None], [7], [5, None, 9, 4]]
    states = partials_via_polars(agg, groups, dtype=pl.Int64)
    assert [agg.result(s) for s in states] == [[1.0, 3.0], None, None, [7.0, 7.0], [4.0, 9.0]]
    assert states[1] == states[2] == agg.initial()


def test_results_of_a_known_group() -> None:
    state = ApproxPercentile((0.5,)).fold([1, 2, 3, 4, None, 10])
    assert ApproxPercentile((0.5,)).result(state) == 3.0  # the 3rd of 5: no interpolation
    assert ApproxPercentiles((0.2, 0.21, 1.0)).result(state) == [1.0, 2.0, 10.0]


@pytest.mark.parametrize("parameters", [(-0.1,), (1.5,), (), (0.5, 0.9)])
def test_a_scalar_call_needs_one_fraction_in_0_1(parameters: tuple[float, ...]) -> None:
    with pytest.raises(ValueError, match="APPROX_PERCENTILE"):
        aggregate_for(AggFunc.APPROX_PERCENTILE, has_argument=True, parameters=parameters)


@pytest.mark.parametrize("parameters", [(), (0.5, 2.0)])
def test_a_list_call_needs_fractions_in_0_1(parameters: tuple[float, ...]) -> None:
    with pytest.raises(ValueError, match="APPROX_PERCENTILE"):
        aggregate_for(AggFunc.APPROX_PERCENTILES, has_argument=True, parameters=parameters)


def test_registered_and_numeric() -> None:
    agg = aggregate_for(AggFunc.APPROX_PERCENTILE, has_argument=True, parameters=(0.9,))
    assert type(agg) is ApproxPercentile and agg.parameters == (0.9,) and agg.numeric_argument
    agg = aggregate_for(AggFunc.APPROX_PERCENTILES, has_argument=True, parameters=(0.1, 0.9))
    assert type(agg) is ApproxPercentiles and agg.parameters == (0.1, 0.9)

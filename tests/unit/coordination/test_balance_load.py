"""Greedy BalanceLoad: moves hot units off the busiest member while it improves."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mars.registry.units import Unit
from reducer.coordination.balance import balance_load


def _max_load(placement: dict[Unit, str], loads: dict[Unit, float], members: set[str]) -> float:
    per = dict.fromkeys(members, 0.0)
    for unit, member in placement.items():
        per[member] += loads.get(unit, 0.0)
    return max(per.values())


def test_moves_the_hottest_unit_to_the_idle_member() -> None:
    hot, warm, cool = Unit("t", 0), Unit("t", 1), Unit("t", 2)
    placement = {hot: "a", warm: "a", cool: "b"}
    loads = {hot: 10.0, warm: 3.0, cool: 1.0}
    assert balance_load(placement, loads, members=["c"]) == {hot: "c", warm: "a", cool: "b"}


def test_stops_when_no_move_improves() -> None:
    only = Unit("t", 0)
    placement = {only: "a", Unit("t", 1): "b"}
    loads = {only: 100.0, Unit("t", 1): 1.0}
    # Moving the single hot unit would just move the hotspot: keep the placement.
    assert balance_load(placement, loads) == placement


def test_max_moves_bounds_churn() -> None:
    placement = {Unit("t", b): "a" for b in range(10)}
    loads = {u: 1.0 for u in placement}
    result = balance_load(placement, loads, members=["b"], max_moves=2)
    assert sum(m == "b" for m in result.values()) == 2
    unbounded = balance_load(placement, loads, members=["b"])
    assert sum(m == "b" for m in unbounded.values()) == 5


@given(
    owners=st.lists(st.sampled_from("abcd"), min_size=1, max_size=40),
    weights=st.lists(st.floats(0, 1000, allow_nan=False), min_size=40, max_size=40),
)
def test_never_worse_and_never_loses_a_unit(owners: list[str], weights: list[float]) -> None:
    placement = {Unit("t", i): owner for i, owner in enumerate(owners)}
    loads = {Unit("t", i): weights[i] for i in range(len(owners))}
    members = set("abcd")
    result = balance_load(placement, loads, members=members)
    assert result.keys() == placement.keys()
    assert set(result.values()) <= members
    assert _max_load(result, loads, members) <= _max_load(placement, loads, members)

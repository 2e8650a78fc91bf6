"""Consistent hashing with virtual nodes: total, stable, and minimal movement."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from mars.registry.units import Unit
from reducer.coordination.placement import place

member_names = st.lists(
    st.text(alphabet="abcdefghij0123456789-", min_size=1, max_size=8),
    min_size=1,
    max_size=8,
    unique=True,
)
units = st.lists(
    st.builds(Unit, st.sampled_from(["clicks", "views", "t-3"]), st.integers(0, 63)),
    max_size=120,
    unique=True,
)


def _units(tasks: int, buckets: int) -> list[Unit]:
    return [Unit(f"task-{t}", b) for t in range(tasks) for b in range(buckets)]


@given(units=units, members=member_names)
def test_every_unit_goes_to_a_member_and_order_does_not_matter(
    units: list[Unit], members: list[str]
) -> None:
    placement = place(units, members)
    assert placement.keys() == set(units)
    assert set(placement.values()) <= set(members)
    assert place(reversed(units), reversed(members)) == placement


@settings(max_examples=50)
@given(units=units, members=member_names, newcomer=st.text(alphabet="xyz", min_size=1))
def test_a_joining_member_only_takes_units(
    units: list[Unit], members: list[str], newcomer: str
) -> None:
    before = place(units, members)
    after = place(units, [*members, newcomer])
    moved = {u for u in units if before[u] != after[u]}
    assert all(after[u] == newcomer for u in moved)


@settings(max_examples=50)
@given(units=units, members=member_names.filter(lambda m: len(m) >= 2))
def test_a_leaving_member_only_gives_its_own_units(units: list[Unit], members: list[str]) -> None:
    before = place(units, members)
    leaver = members[0]
    after = place(units, members[1:])
    moved = {u for u in units if before[u] != after[u]}
    assert moved == {u for u in units if before[u] == leaver}


def test_movement_is_about_one_over_n() -> None:
    everything = _units(40, 50)  # 2,000 units
    members = [f"reducer-{i}" for i in range(5)]
    before = place(everything, members)
    after = place(everything, [*members, "reducer-5"])
    moved = sum(before[u] != after[u] for u in everything)
    assert 0.5 / 6 < moved / len(everything) < 1.6 / 6


def test_virtual_nodes_spread_the_load() -> None:
    everything = _units(40, 50)
    counts = Counter(place(everything, [f"r{i}" for i in range(4)]).values())
    assert len(counts) == 4
    assert max(counts.values()) < 1.35 * len(everything) / 4
    assert min(counts.values()) > 0.65 * len(everything) / 4


def test_no_members_means_no_placement() -> None:
    assert place(_units(1, 4), []) == {}


def test_placement_is_the_same_in_another_process() -> None:
    """Python's hash() is salted per process; the ring must not depend on it."""
    code = (
        "from reducer.coordination.placement import place;"
        "from mars.registry.units import Unit;"
        "p = place([Unit('t', b) for b in range(32)], ['a', 'b', 'c']);"
        "print(sorted((u.bucket, m) for u, m in p.items()))"
    )
    run = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONHASHSEED": "12345", "PATH": ""},
    )
    here = place([Unit("t", b) for b in range(32)], ["a", "b", "c"])
    assert run.stdout.strip() == str(sorted((u.bucket, m) for u, m in here.items()))

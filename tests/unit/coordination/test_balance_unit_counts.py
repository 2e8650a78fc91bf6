"""The leader's default refinement evens out unit counts while moving as few units as it can."""

from __future__ import annotations

from collections import Counter

from mars.registry.units import Unit
from reducer.coordination.balance import balance_unit_counts
from reducer.coordination.placement import place


def test_balance_unit_counts_evens_out_a_lopsided_ring() -> None:
    members = frozenset({"reducer-a", "reducer-b", "reducer-c"})
    units = [Unit("paper", bucket) for bucket in range(8)]
    ring = place(units, members)
    balanced = balance_unit_counts(ring, members)
    counts = Counter(balanced.values())
    assert set(balanced) == set(units)
    assert max(counts.values()) - min(counts.get(m, 0) for m in members) <= 1
    moved = sum(ring[u] != balanced[u] for u in units)
    assert moved <= max(Counter(ring.values()).values()) - len(units) // len(members)

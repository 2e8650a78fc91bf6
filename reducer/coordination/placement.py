"""Consistent hashing of units onto reducers, with virtual nodes ([XORTrack], docs/references.md).

Each member owns `vnodes` points on a 64-bit ring; a unit belongs to the first member point at
or after the unit's own point (wrapping around). Adding or removing one member therefore only
moves the units whose arc that member takes or gives back: about 1/n of them, and only to or
from that member. Hashes are BLAKE2b, so every process computes the same ring (Python's
`hash()` is salted per process and would not).
"""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Iterable

from mars.registry.units import Unit


def _point(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")


class HashRing:
    """An immutable ring of `vnodes` points per member."""

    def __init__(self, members: Iterable[str], *, vnodes: int = 64) -> None:
        if vnodes < 1:
            raise ValueError("vnodes must be >= 1")
        # (point, member) sorted; ties (astronomically rare) are broken by member name.
        ring = sorted(
            (_point(f"{member}#{i}"), member) for member in set(members) for i in range(vnodes)
        )
        self._points = [point for point, _ in ring]
        self._owners = [member for _, member in ring]

    def __bool__(self) -> bool:
        return bool(self._points)

    def owner(self, unit: Unit) -> str:
        """The member owning `unit`; `LookupError` on an empty ring."""
        if not self._points:
            raise LookupError("no members on the ring")
        index = bisect.bisect_left(self._points, _point(f"{unit.task_id}/{unit.bucket}"))
        return self._owners[index % len(self._owners)]


def place(units: Iterable[Unit], members: Iterable[str], *, vnodes: int = 64) -> dict[Unit, str]:
    """Map every unit to a member by consistent hashing; empty when there are no members."""
    ring = HashRing(members, vnodes=vnodes)
    if not ring:
        return {}
    return {Unit(*unit): ring.owner(Unit(*unit)) for unit in units}

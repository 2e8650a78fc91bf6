"""Load-aware refinement of a placement: [SPSPS]'s greedy BalanceLoad (docs/references.md).

Starting from a placement (usually consistent hashing), repeatedly move the hottest unit of
the busiest member to the least loaded member, as long as the receiver ends up less loaded
than the donor was. Each move strictly lowers the sum of squared member loads, so the loop
always ends. Pure: loads come from the caller
(e.g. records per second per unit reported by the reducers).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping

from mars.registry.units import Unit


def balance_load(
    placement: Mapping[Unit, str],
    loads: Mapping[Unit, float],
    *,
    members: Iterable[str] | None = None,
    max_moves: int | None = None,
    fixed: Collection[Unit] = (),
) -> dict[Unit, str]:
    """Return a refined copy of `placement`; units without a load count as 0.

    `members` adds members that own nothing yet (a fresh reducer is the best receiver).
    `max_moves` bounds the churn of one call (None: until no move improves). `fixed` units
    count in their member's load but do not move (e.g. units moved a moment ago).
    """
    result = dict(placement)
    member_units: dict[str, list[Unit]] = {m: [] for m in members or ()}
    for unit, member in result.items():
        member_units.setdefault(member, []).append(unit)
    if len(member_units) < 2:
        return result
    member_load = {m: sum(loads.get(u, 0.0) for u in units) for m, units in member_units.items()}
    # The potential argument bounds the loop already; the cap guards against float rounding.
    limit = max_moves if max_moves is not None else len(result) * len(member_units)
    moves = 0
    while moves < limit:
        # Sort keys make the choice deterministic when loads tie.
        busiest = max(member_load, key=lambda m: (member_load[m], m))
        idlest = min(member_load, key=lambda m: (member_load[m], m))
        gap = member_load[busiest] - member_load[idlest]
        # Only moves that improve: the receiver must end below the donor's old load. The
        # hottest such unit ([SPSPS] moves the hottest; we skip ones too hot to fit the gap).
        movable = [
            u for u in member_units[busiest] if u not in fixed and 0 < loads.get(u, 0.0) < gap
        ]
        if not movable:
            break
        hottest = max(movable, key=lambda u: (loads.get(u, 0.0), u))
        load = loads.get(hottest, 0.0)
        member_units[busiest].remove(hottest)
        member_units[idlest].append(hottest)
        member_load[busiest] -= load
        member_load[idlest] += load
        result[hottest] = idlest
        moves += 1
    return result


def balance_unit_counts(placement: Mapping[Unit, str], members: frozenset[str]) -> dict[Unit, str]:
    """A `Refinement` for the leader: even out unit counts (load 1 per unit).

    Consistent hashing alone spreads few units unevenly (8 buckets over 2 members can split
    6/2); this moves only the units needed to even it out, so most placements stay put.
    """
    return balance_load(placement, dict.fromkeys(placement, 1.0), members=members)

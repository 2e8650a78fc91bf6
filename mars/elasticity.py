"""Elasticity advice ([SPSPS], docs/references.md): how many processes of a role the load needs.

Each mapper and reducer publishes its CPU share (CPU seconds per wall second; 1.0 = one core).
While the mean share stays inside [lower, upper] the count is right; outside it, the number
needed is computed in one step, so that the same total load would sit at `target` per process
([SPSPS]: no cascade of +1s). Pure; `GET /cluster`, the dashboard and the API's metrics show it,
`mars local scale` acts on it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class CpuBand:
    """[SPSPS]'s TUT, UUT and LUT: the target share per process and the band around it."""

    target: float = 0.6
    upper: float = 0.8
    lower: float = 0.3

    def __post_init__(self) -> None:
        if not 0 < self.lower < self.target < self.upper:
            raise ValueError("need 0 < lower < target < upper")


@dataclass(frozen=True, slots=True, kw_only=True)
class Advice:
    current: int
    needed: int
    mean_cpu: float | None  # None: no process reported a share yet
    reason: str


def advise(shares: Sequence[float | None], band: CpuBand, *, minimum: int = 1) -> Advice:
    """The number of processes the load of `shares` (one per live process) needs."""
    current = len(shares)
    known = [share for share in shares if share is not None]
    if not known:
        return Advice(
            current=current,
            needed=max(current, minimum),
            mean_cpu=None,
            reason="no load reported yet",
        )
    mean = sum(known) / len(known)
    total = mean * current  # processes without a reading count as average ones
    if band.lower <= mean <= band.upper:
        return Advice(
            current=current,
            needed=max(current, minimum),
            mean_cpu=round(mean, 3),
            reason="within the band",
        )
    needed = max(minimum, math.ceil(total / band.target))
    side = "above" if mean > band.upper else "below"
    return Advice(
        current=current,
        needed=needed,
        mean_cpu=round(mean, 3),
        reason=f"mean CPU {mean:.2f} {side} the band [{band.lower}, {band.upper}]: "
        f"{total:.2f} cores of load at {band.target} per process",
    )

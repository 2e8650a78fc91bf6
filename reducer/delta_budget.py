"""`DeltaBudget`: whether an owner's next checkpoint may be a delta (only the groups changed
since the checkpoint before it) or must be a full one (docs/reducer.md, "Incremental
checkpoints").

A chain is read whole on recovery and kept whole in Redis until the next full checkpoint
replaces it, so both stay bounded: at most `max_deltas` deltas on top of a full checkpoint, and
at most as many stale groups as the full one holds. Stale are the groups the deltas carry (each
replaces or adds one) and those of windows closed since the full checkpoint (a recovery drops
them): the chain then holds at most about twice the open state, and once windows close or the
same groups are rewritten again and again, a full checkpoint, cheaper to read than the chain,
replaces it (and frees the closed windows' state in Redis).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class DeltaBudget:
    max_deltas: int
    base_groups: int | None = None  # groups in this owner's last full checkpoint (None: none)
    stale_groups: int = 0  # groups in its deltas and in windows closed since it
    deltas: int = 0

    def allows(self, changed_groups: int) -> bool:
        """Whether a delta of `changed_groups` may go on the chain. An owner that has not
        written a full checkpoint itself (just recovered) does not know the chain's size:
        its first checkpoint is a full one."""
        return (
            self.base_groups is not None
            and self.deltas < self.max_deltas
            and self.stale_groups + changed_groups <= self.base_groups
        )

    def closed(self, groups: int) -> None:
        """Windows of `groups` groups closed: their state in the chain is of no use now."""
        self.stale_groups += groups

    def wrote_full(self, groups: int) -> None:
        self.base_groups, self.stale_groups, self.deltas = groups, 0, 0

    def wrote_delta(self, groups: int) -> None:
        self.stale_groups += groups
        self.deltas += 1

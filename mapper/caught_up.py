"""Since when each owned partition has been confirmed caught up, without a break.

Idleness (the reducers leave idle partitions out of the watermark) must never come from an
outage: a partition counts as caught up only when a broker answered *this round*, after the
mapper's last consumed record, with a high watermark the read position has reached. Any break
(a failed or missing answer, a pause, a seek, a newly consumed record) restarts the run, so a
partition is idle only after `idle_timeout` of confirmed silence. Pure logic; the loop asks the
broker and feeds the answers in.
"""

from __future__ import annotations

from mars.clients.end_offsets import PartitionKey


class CaughtUpTracker:
    """Per partition, the wall time at which the current run of confirmed checks began."""

    def __init__(self) -> None:
        self._since: dict[PartitionKey, int] = {}

    def confirmed(self, key: PartitionKey, *, caught_up: bool, now_ms: int) -> int | None:
        """One check's outcome; returns since when `key` has been caught up (None: it is not)."""
        if not caught_up:
            self._since.pop(key, None)
            return None
        return self._since.setdefault(key, now_ms)

    def consumed(self, key: PartitionKey) -> None:
        """New records of `key` were read: whatever was confirmed before is behind them."""
        self._since.pop(key, None)

    def forget(self, keep: set[PartitionKey]) -> None:
        """Drop partitions this mapper no longer owns."""
        for key in list(self._since):
            if key not in keep:
                del self._since[key]

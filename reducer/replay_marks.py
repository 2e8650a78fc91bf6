"""Which data sets a recovery must replay on top of the last checkpoint (windows and
cumulative windows; sessions keep one mark per bucket instead).

Per bucket, the first data set merged since the last checkpoint into each open window (keyed
by its start: a window's, or a max window's). A recovery replays each bucket from the smallest
such data set (its `rseq`), or from the one after the last merged when none is marked. A window
that closes takes its marks with it (it was emitted: nothing of it needs replaying), which a
new checkpoint must then record; a checkpoint clears every mark.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class ReplayMarks:
    _first_seq: dict[int, dict[int, int]] = field(default_factory=dict)  # bucket -> start -> seq
    _dropped_since_checkpoint: bool = False

    def merged(self, bucket: int, start: int, seq: int) -> None:
        """Data set `seq` of `bucket` was merged into the open window `start`."""
        self._first_seq.setdefault(bucket, {}).setdefault(start, seq)

    def dropped(self, start: int) -> None:
        """The window `start` closed and left the open state."""
        for first_seqs in self._first_seq.values():
            first_seqs.pop(start, None)
        self._dropped_since_checkpoint = True

    @property
    def needs_checkpoint(self) -> bool:
        """Some open window holds data merged since the last checkpoint, or that checkpoint
        still holds windows dropped since (a new one frees their memory in Redis)."""
        return self._dropped_since_checkpoint or any(self._first_seq.values())

    def checkpointed(self) -> None:
        """The open windows as they are now are saved: nothing merged so far needs a replay."""
        self._first_seq.clear()
        self._dropped_since_checkpoint = False

    def rseq(self, bucket: int, merged_through: int) -> int:
        """The first data set of `bucket` an open window needs on top of the last checkpoint,
        `merged_through` being the last one merged."""
        first = self._first_seq.get(bucket, {})
        return min(first.values(), default=merged_through + 1)

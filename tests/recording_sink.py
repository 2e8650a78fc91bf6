"""A `SideRecordSink` that keeps late and bad records in memory (the side topics themselves
are tested end to end), and can fail on its n-th call (a crash in the middle of a write)."""

from __future__ import annotations

from collections.abc import Sequence

from mars.engine.records import RejectedRecord
from mars.tasks.spec import TaskSpec


class RecordingSink:
    def __init__(self, fail_on: int | None = None) -> None:
        self.bad: list[RejectedRecord] = []
        self.late: list[RejectedRecord] = []
        self.calls = 0
        self._fail_on = fail_on

    def publish(
        self,
        spec: TaskSpec,
        *,
        source: str,
        bad: Sequence[RejectedRecord],
        late: Sequence[RejectedRecord],
    ) -> None:
        self.calls += 1
        if self.calls == self._fail_on:
            raise RuntimeError("executor lost")
        self.bad += bad
        self.late += late

"""Backpressure: pause a task's source partitions before Redis holds too much ([BPMigration]).

Two reasons to pause a task, each with hysteresis (pause at the mark, resume below half):

- its **unmerged backlog** (data sets written that no reducer has merged yet) passes
  `backlog_high_datasets`. Merging never waits for a window to close, so this pause always
  ends while reducers run: it cannot hold back the windows whose closing it waits for.
- Redis `used_memory` passes `redis_memory_high_bytes` **and** the task still has data sets in
  Redis (merged or not). Reducers release merged data sets at their next checkpoint, whatever
  the watermark, so this pause ends too; a task with nothing left to release is not paused for
  memory (pausing it would only freeze its watermark, and with it the windows whose closing
  frees their state). Memory held by open-window state itself is not backlog: if it passes
  Redis's `maxmemory`, writes fail with Redis's OOM error and the mapper retries, loudly.

Redis is read at most every `check_interval_ms` (one MGET for every task, one INFO); in
between, the data sets this mapper writes are added to the last reading, and a task is
pressured as soon as one more batch (up to one data set per bucket) could pass the mark. So
with one mapper the backlog levels off below the mark; with N mappers it can pass it by what
the others write within one check interval. Nothing is dropped: paused partitions stay in Kafka.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from mars.store.state import Backlog


@dataclass(frozen=True, slots=True, kw_only=True)
class PressureMarks:
    backlog_high_datasets: int
    redis_memory_high_bytes: int
    check_interval_ms: int = 500


class BackpressureGate:
    """Per-task pause/resume decisions with hysteresis (pure logic; the loop reads Redis)."""

    def __init__(self, marks: PressureMarks) -> None:
        self._marks = marks
        self._backlog: dict[str, Backlog] = {}  # last reading + data sets written since
        self._pressured: set[str] = set()
        self._memory_pressured = False
        self._last_check_ms: int | None = None

    def due(self, now_ms: int) -> bool:
        last = self._last_check_ms
        return last is None or now_ms - last >= self._marks.check_interval_ms

    def update(self, *, now_ms: int, backlogs: Mapping[str, Backlog], memory_used: int) -> None:
        """A fresh reading: the backlog of each task, Redis memory."""
        self._last_check_ms = now_ms
        high_memory = self._marks.redis_memory_high_bytes
        if memory_used >= high_memory:
            self._memory_pressured = True
        elif memory_used < high_memory // 2:
            self._memory_pressured = False
        self._backlog = dict(backlogs)
        for task in list(self._pressured):
            if task not in backlogs:
                self._pressured.discard(task)

    def note_written(self, task: str, datasets: int, *, buckets: int) -> None:
        """This mapper wrote `datasets` for `task`: pressured now if one more batch could pass."""
        before = self._backlog.get(task, Backlog(unmerged=0, unreleased=0))
        self._backlog[task] = Backlog(
            unmerged=before.unmerged + datasets, unreleased=before.unreleased + datasets
        )
        self.evaluate(task, buckets=buckets)

    def evaluate(self, task: str, *, buckets: int) -> None:
        high = self._marks.backlog_high_datasets
        unmerged = self.backlog(task)
        if unmerged + buckets > high:
            self._pressured.add(task)
        elif unmerged < high // 2:
            self._pressured.discard(task)

    def pressured(self, task: str) -> bool:
        if task in self._pressured:
            return True
        backlog = self._backlog.get(task)
        return self._memory_pressured and backlog is not None and backlog.unreleased > 0

    @property
    def memory_pressured(self) -> bool:
        return self._memory_pressured

    def backlog(self, task: str) -> int:
        """The task's unmerged data sets, as last read plus what this mapper wrote since."""
        backlog = self._backlog.get(task)
        return 0 if backlog is None else backlog.unmerged

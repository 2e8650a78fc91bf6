"""Backpressure: pause a task's source partitions before Redis holds too much (seed 001).

A task is *pressured* when its un-reduced backlog (data sets written, not yet released) or the
Redis memory passes its high mark; it stops being pressured when both are below half of their
mark. Redis is read at most every `check_interval_ms` (one MGET per task plus one INFO); in
between, the data sets this mapper writes are added to the last reading, and a task is
pressured as soon as one more batch (up to one data set per bucket) could pass the mark. So
with one mapper the backlog levels off below the mark; with N mappers it can pass it by what
the others write within one check interval. Nothing is dropped: paused partitions stay in Kafka.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class PressureMarks:
    backlog_high_datasets: int
    redis_memory_high_bytes: int
    check_interval_ms: int = 500


class BackpressureGate:
    """Per-task pause/resume decisions with hysteresis (pure logic; the loop reads Redis)."""

    def __init__(self, marks: PressureMarks) -> None:
        self._marks = marks
        self._backlog: dict[str, int] = {}  # last reading + data sets written since
        self._pressured: set[str] = set()
        self._memory_pressured = False
        self._last_check_ms: int | None = None

    def due(self, now_ms: int) -> bool:
        last = self._last_check_ms
        return last is None or now_ms - last >= self._marks.check_interval_ms

    def update(self, *, now_ms: int, backlogs: Mapping[str, int], memory_used: int) -> None:
        """A fresh reading: backlog per task (and its bucket count via `note`), Redis memory."""
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
        self._backlog[task] = self._backlog.get(task, 0) + datasets
        self.evaluate(task, buckets=buckets)

    def evaluate(self, task: str, *, buckets: int) -> None:
        high = self._marks.backlog_high_datasets
        backlog = self._backlog.get(task, 0)
        if backlog + buckets > high:
            self._pressured.add(task)
        elif backlog < high // 2:
            self._pressured.discard(task)

    def pressured(self, task: str) -> bool:
        return self._memory_pressured or task in self._pressured

    @property
    def memory_pressured(self) -> bool:
        return self._memory_pressured

    def backlog(self, task: str) -> int:
        return self._backlog.get(task, 0)

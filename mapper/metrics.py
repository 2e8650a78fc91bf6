"""Local per-task metrics of this mapper process, logged as one line per task every 10 s.

The exact, cluster-wide counters live in Redis (`mars:{T}:stats`, moved by the same script as
the data); this snapshot is what one process did, for its log and for operators.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass

from mapper.batch_writer import WriteOutcome

log = logging.getLogger(__name__)


@dataclass(slots=True)
class TaskMetrics:
    """Counters of one task in this process (monotone, except `backlog`: last reading)."""

    records_in: int = 0
    bad: int = 0
    late: int = 0
    batches: int = 0
    datasets: int = 0
    rejected: int = 0
    backlog: int = 0
    paused_ms: int = 0


class MapperMetrics:
    """Per-task `TaskMetrics` plus the periodic log line."""

    def __init__(self, *, log_interval_ms: int = 10_000) -> None:
        self._tasks: dict[str, TaskMetrics] = {}
        self._log_interval_ms = log_interval_ms
        self._last_log_ms: int | None = None
        self._unflushed_paused_ms: dict[str, int] = {}

    def task(self, task_id: str) -> TaskMetrics:
        return self._tasks.setdefault(task_id, TaskMetrics())

    def record_write(self, task_id: str, outcome: WriteOutcome) -> None:
        metrics = self.task(task_id)
        metrics.rejected += outcome.rejected
        if outcome.applied:
            metrics.records_in += outcome.records_in
            metrics.bad += outcome.bad
            metrics.late += outcome.late
            metrics.batches += 1
            metrics.datasets += outcome.datasets

    def add_paused(self, task_id: str, paused_ms: int) -> None:
        if paused_ms > 0:
            self.task(task_id).paused_ms += paused_ms
            self._unflushed_paused_ms[task_id] = (
                self._unflushed_paused_ms.get(task_id, 0) + paused_ms
            )

    def take_unflushed_paused(self, task_id: str) -> dict[str, int]:
        """Paused time not yet counted in Redis, as counters for the next apply (then reset)."""
        paused = self._unflushed_paused_ms.pop(task_id, 0)
        return {"paused_ms": paused} if paused else {}

    def return_unflushed_paused(self, task_id: str, counters: dict[str, int]) -> None:
        """The apply did not happen: keep the paused time for the next one."""
        paused = counters.get("paused_ms", 0)
        if paused:
            self._unflushed_paused_ms[task_id] = self._unflushed_paused_ms.get(task_id, 0) + paused

    def forget(self, task_id: str) -> None:
        self._tasks.pop(task_id, None)
        self._unflushed_paused_ms.pop(task_id, None)

    def snapshot(self) -> dict[str, dict[str, int]]:
        return {task_id: asdict(m) for task_id, m in sorted(self._tasks.items())}

    def log_if_due(self, now_ms: int) -> None:
        if self._last_log_ms is not None and now_ms - self._last_log_ms < self._log_interval_ms:
            return
        self._last_log_ms = now_ms
        for task_id, values in self.snapshot().items():
            log.info("task %s %s", task_id, " ".join(f"{k}={v}" for k, v in values.items()))

"""What this mapper process did, per task: Prometheus metrics plus one log line per task every
10 s.

The exact, cluster-wide counters live in Redis (`mars:{T}:stats`, moved by the same script as
the data); these are one process's share, counted only for applied writes, so the sum over
the mappers equals the exact counters until a mapper restarts (Prometheus counters start at 0
with the process; `rate()` and `increase()` handle that).

Prometheus names (labels `task`, `topic`, `partition`):
- `mars_mapper_records_{in,accepted,late,bad}_total{task}`, `mars_mapper_batches_total{task}`,
  `mars_mapper_datasets_written_total{task}`, `mars_mapper_rejected_writes_total{task}`;
- `mars_mapper_batch_duration_seconds{task}`: one task's share of a batch, pre-aggregation and
  the Redis round trip;
- `mars_mapper_backlog_datasets{task}`: the task's unmerged data sets in Redis (last reading);
- `mars_mapper_paused_seconds_total{task}`: time its partitions spent paused by backpressure;
- `mars_mapper_consumer_lag_records{topic, partition}`: the broker's end offset (last stable)
  minus this mapper's read position; `mars_mapper_partition_paused{topic, partition}`.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from mapper.batch_writer import WriteOutcome
from mars.clients.end_offsets import PartitionKey

log = logging.getLogger(__name__)

BATCH_SECONDS_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0)


@dataclass(slots=True)
class TaskMetrics:
    """Counters of one task in this process (monotone, except `backlog`: last reading)."""

    records_in: int = 0
    accepted: int = 0
    bad: int = 0
    late: int = 0
    batches: int = 0
    datasets: int = 0
    rejected: int = 0
    backlog: int = 0
    paused_ms: int = 0


class _Instruments:
    """The process's Prometheus metrics, registered in one `CollectorRegistry`."""

    def __init__(self, registry: CollectorRegistry) -> None:
        def counter(name: str, doc: str) -> Counter:
            return Counter(f"mars_mapper_{name}", doc, ["task"], registry=registry)

        self.records_in = counter("records_in", "Records read from the task's source topic.")
        self.accepted = counter("records_accepted", "Records that were on time and decoded.")
        self.late = counter("records_late", "Records too late for their windows (late topic).")
        self.bad = counter("records_bad", "Records that did not decode (dead-letter topic).")
        self.batches = counter("batches", "Batches applied to Redis.")
        self.datasets = counter("datasets_written", "Data sets written to Redis.")
        self.rejected = counter("rejected_writes", "Writes Redis refused (replays, zombies).")
        self.paused = counter("paused_seconds", "Time partitions spent paused by backpressure.")
        self.batch_seconds = Histogram(
            "mars_mapper_batch_duration_seconds",
            "One task's share of a batch: pre-aggregation and the Redis round trip.",
            ["task"],
            buckets=BATCH_SECONDS_BUCKETS,
            registry=registry,
        )
        self.backlog = Gauge(
            "mars_mapper_backlog_datasets",
            "The task's data sets in Redis no reducer has merged yet (last reading).",
            ["task"],
            registry=registry,
        )
        self.lag = Gauge(
            "mars_mapper_consumer_lag_records",
            "The partition's end offset (last stable) minus this mapper's read position.",
            ["topic", "partition"],
            registry=registry,
        )
        self.partition_paused = Gauge(
            "mars_mapper_partition_paused",
            "1 while backpressure holds the partition paused.",
            ["topic", "partition"],
            registry=registry,
        )


class MapperMetrics:
    """Per-task `TaskMetrics`, the Prometheus instruments, and the periodic log line."""

    def __init__(
        self, *, registry: CollectorRegistry | None = None, log_interval_ms: int = 10_000
    ) -> None:
        self.registry = registry or CollectorRegistry()
        self._prom = _Instruments(self.registry)
        self._tasks: dict[str, TaskMetrics] = {}
        self._log_interval_ms = log_interval_ms
        self._last_log_ms: int | None = None
        self._unflushed_paused_ms: dict[str, int] = {}
        self._partitions: set[PartitionKey] = set()

    def task(self, task_id: str) -> TaskMetrics:
        return self._tasks.setdefault(task_id, TaskMetrics())

    def record_write(self, task_id: str, outcome: WriteOutcome, *, seconds: float) -> None:
        metrics, prom = self.task(task_id), self._prom
        metrics.rejected += outcome.rejected
        prom.rejected.labels(task_id).inc(outcome.rejected)
        if not outcome.applied:
            return
        accepted = outcome.records_in - outcome.bad - outcome.late
        metrics.records_in += outcome.records_in
        metrics.accepted += accepted
        metrics.bad += outcome.bad
        metrics.late += outcome.late
        metrics.batches += 1
        metrics.datasets += outcome.datasets
        prom.records_in.labels(task_id).inc(outcome.records_in)
        prom.accepted.labels(task_id).inc(accepted)
        prom.bad.labels(task_id).inc(outcome.bad)
        prom.late.labels(task_id).inc(outcome.late)
        prom.batches.labels(task_id).inc()
        prom.datasets.labels(task_id).inc(outcome.datasets)
        prom.batch_seconds.labels(task_id).observe(seconds)

    def set_backlog(self, task_id: str, unmerged: int) -> None:
        self.task(task_id).backlog = unmerged
        self._prom.backlog.labels(task_id).set(unmerged)

    def set_partitions(
        self, lag: Mapping[PartitionKey, int | None], paused: Iterable[PartitionKey]
    ) -> None:
        """The owned partitions now: lag (None: no broker answer this round) and paused ones.
        Partitions no longer owned leave the metrics."""
        paused = set(paused)
        for key in self._partitions - set(lag):
            for gauge in (self._prom.lag, self._prom.partition_paused):
                with contextlib.suppress(KeyError):  # lag: no broker answer yet
                    gauge.remove(key[0], str(key[1]))
        self._partitions = set(lag)
        for (topic, partition), records in lag.items():
            if records is not None:
                self._prom.lag.labels(topic, str(partition)).set(records)
            is_paused = (topic, partition) in paused
            self._prom.partition_paused.labels(topic, str(partition)).set(int(is_paused))

    def add_paused(self, task_id: str, paused_ms: int) -> None:
        if paused_ms > 0:
            self.task(task_id).paused_ms += paused_ms
            self._prom.paused.labels(task_id).inc(paused_ms / 1000)
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
        with contextlib.suppress(KeyError):  # never had a backlog reading
            self._prom.backlog.remove(task_id)

    def backlogs(self) -> dict[str, int]:
        """Task -> unmerged data sets at the last reading."""
        return {task_id: m.backlog for task_id, m in sorted(self._tasks.items())}

    def snapshot(self) -> dict[str, dict[str, int]]:
        return {task_id: asdict(m) for task_id, m in sorted(self._tasks.items())}

    def log_if_due(self, now_ms: int) -> None:
        if self._last_log_ms is not None and now_ms - self._last_log_ms < self._log_interval_ms:
            return
        self._last_log_ms = now_ms
        for task_id, values in self.snapshot().items():
            log.info("task %s %s", task_id, " ".join(f"{k}={v}" for k, v in values.items()))

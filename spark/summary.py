"""What a backfill did: per source partition (from the executors) and in total (the driver)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from mars.engine.finalize import iso_utc


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionSummary:
    """One Spark task's work on one source partition (a Kafka partition or an input file).

    `skipped` records were already applied by an earlier run or attempt of the same job.
    """

    partition: int
    records_read: int = 0
    skipped: int = 0
    records_in: int = 0
    accepted: int = 0
    filtered: int = 0
    bad: int = 0
    late: int = 0
    datasets: int = 0
    chunks: int = 0
    last_offset: int | None = None
    stream_time_ms: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class BackfillSummary:
    """The end-of-job report of `mars spark preagg`."""

    task: str
    job: str
    partitions: tuple[PartitionSummary, ...] = field(default_factory=tuple)
    elapsed_s: float = 0.0

    @classmethod
    def of(
        cls, *, task: str, job: str, parts: Iterable[PartitionSummary], elapsed_s: float
    ) -> BackfillSummary:
        ordered = tuple(sorted(parts, key=lambda p: p.partition))
        return cls(task=task, job=job, partitions=ordered, elapsed_s=elapsed_s)

    def _total(self, name: str) -> int:
        return sum(int(getattr(part, name)) for part in self.partitions)

    @property
    def records_read(self) -> int:
        return self._total("records_read")

    @property
    def skipped(self) -> int:
        return self._total("skipped")

    @property
    def records_in(self) -> int:
        return self._total("records_in")

    @property
    def accepted(self) -> int:
        return self._total("accepted")

    @property
    def bad(self) -> int:
        return self._total("bad")

    @property
    def late(self) -> int:
        return self._total("late")

    @property
    def datasets(self) -> int:
        return self._total("datasets")

    @property
    def newest_event_time_ms(self) -> int | None:
        times = [p.stream_time_ms for p in self.partitions if p.stream_time_ms is not None]
        return max(times) if times else None

    def completion(self, *, idle_timeout_ms: int) -> str:
        """When the task's windows of this history come out (the CLI prints it last)."""
        newest = self.newest_event_time_ms
        if newest is None:
            return "No record had an event time: no window of this history to wait for."
        return (
            f"The history's windows close as the task's watermark passes them (newest event "
            f"time {iso_utc(newest)}): with live records, as they arrive; without any, by "
            f"idle close, about {idle_timeout_ms / 1000:g} s after the mappers find every "
            "partition caught up, plus each last window's own end and grace past that time. "
            "A paused task starts none of this until `mars task resume`."
        )

    def describe(self) -> str:
        rate = self.records_read / self.elapsed_s if self.elapsed_s > 0 else 0.0
        return (
            f"backfill {self.job} of task {self.task}: {self.records_read:,} records read "
            f"({self.skipped:,} already applied), {self.records_in:,} applied: "
            f"{self.accepted:,} accepted, {self.bad:,} bad, {self.late:,} late; "
            f"{self.datasets:,} data sets written in {self.elapsed_s:.1f} s ({rate:,.0f} records/s)"
        )

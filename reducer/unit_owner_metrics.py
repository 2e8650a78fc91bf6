"""`UnitOwnerMetrics`: one owner's bookkeeping for `ReducerMetrics` (Prometheus and Redis).

It counts merges, derives the merge rate and the load (partial groups merged per second,
smoothed: what the leader balances), remembers the last backlog and latencies, and publishes
the unit's committed counters and gauges about once a second. Commit figures are reported only
after the transaction committed, so a replay after recovery does not count them twice.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from mars.store.reducer_stats import chain_figure
from reducer.open_windows import LateContribution
from reducer.progress_record import COUNTER_NAMES, ProgressRecord
from reducer.reducer_metrics import CommitFigures, ReducerMetrics, UnitGauges

LOAD_SMOOTHING = 0.3  # weight of the last second in the published load (about 3 s memory)


class UnitOwnerMetrics:
    """The figures of one owned unit; `metrics` None: only the merge rate is kept (tests)."""

    def __init__(
        self, metrics: ReducerMetrics | None, *, task_id: str, bucket: int, member_id: str
    ) -> None:
        self._metrics = metrics
        self._task_id = task_id
        self._bucket = bucket
        self._member_id = member_id
        self._merged_total = 0
        self._groups_total = 0
        self._rate_mark = (time.monotonic(), 0, 0)
        self._merge_rate = 0.0
        self._load: float | None = None
        self._backlog: int | None = None
        self._commit_latency_ms: float | None = None
        self._result_latency_ms: int | None = None
        self._last_publish = 0.0

    @property
    def merge_rate(self) -> float:
        """Data sets merged per second, over the last second or so (the process sums them)."""
        return self._merge_rate

    def read(self, *, merged: int, groups: int, backlog: int) -> None:
        """One step's read: count its merges; about once a second, the merge rate and the load
        (partial groups merged per second, smoothed over a few seconds)."""
        if self._metrics is not None:
            self._metrics.merged(self._task_id, self._bucket, merged)
        self._backlog = backlog
        self._merged_total += merged
        self._groups_total += groups
        mark_time, mark_merged, mark_groups = self._rate_mark
        elapsed = time.monotonic() - mark_time
        if elapsed >= 1.0:
            self._merge_rate = (self._merged_total - mark_merged) / elapsed
            rate = (self._groups_total - mark_groups) / elapsed
            self._load = (
                rate
                if self._load is None
                else LOAD_SMOOTHING * rate + (1 - LOAD_SMOOTHING) * self._load
            )
            self._rate_mark = (time.monotonic(), self._merged_total, self._groups_total)

    def spilled(self, windows: int) -> None:
        if self._metrics is not None:
            self._metrics.spilled(self._task_id, self._bucket, windows)

    def checkpointed(self, *, size: int, seconds: float, delta: bool) -> None:
        if self._metrics is not None:
            self._metrics.checkpointed(
                self._task_id, self._bucket, size=size, seconds=seconds, delta=delta
            )

    def committed(
        self,
        *,
        closes_at: Sequence[int],
        rows: int,
        late: Sequence[LateContribution],
        seconds: float,
        now: int,
    ) -> None:
        """After a successful commit: what it carried, how long it took, and how long each
        closed window (closable at `closes_at`, its end + grace) waited for it."""
        self._commit_latency_ms = seconds * 1000
        latencies = [now - closable for closable in closes_at]
        if latencies:
            self._result_latency_ms = max(latencies)
        if self._metrics is None:
            return
        self._metrics.committed(
            self._task_id,
            self._bucket,
            CommitFigures(
                windows=len(closes_at),
                rows=rows,
                late_contributions=len(late),
                late_records=sum(contribution.records for contribution in late),
                seconds=seconds,
                result_latencies_s=[latency / 1000 for latency in latencies],
            ),
        )

    def publish(
        self,
        now: int,
        *,
        committed: ProgressRecord,
        watermark: int | None,
        view_ms: int | None,
        force: bool,
    ) -> None:
        """The unit's committed counters and gauges, at most once a second unless `force`
        (after a commit). `view_ms`: the committed checkpoint holds the open windows as merged
        at this time."""
        metrics = self._metrics
        if metrics is None:
            return
        if not force and time.monotonic() - self._last_publish < 1.0:
            return
        self._last_publish = time.monotonic()
        chain = committed.checkpoint_chain
        metrics.publish_unit(
            self._task_id,
            self._bucket,
            counters={name: committed.counter(name) for name in COUNTER_NAMES},
            gauges=UnitGauges(
                watermark=watermark,
                watermark_lag_ms=None if watermark is None else now - watermark,
                merge_rate=self._merge_rate,
                load=self._load,
                backlog=self._backlog,
                commit_latency_ms=self._commit_latency_ms,
                result_latency_ms=self._result_latency_ms,
                checkpoint=chain_figure(ref.field for ref in chain),
                view_ms=view_ms,
                owner=self._member_id,
                updated_ms=now,
            ),
        )

    def stopped(self) -> None:
        """The unit stops here: its gauges go."""
        if self._metrics is not None:
            self._metrics.unit_stopped(self._task_id, self._bucket)

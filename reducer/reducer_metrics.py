"""Reducer metrics: Prometheus (this process's `/metrics`) and Redis (`mars.store.reducer_stats`,
for the API, the dashboard and `mars top`, which see every reducer at once).

Redis:
- per unit, hash `mars:{<task>}:reducer_stats`, fields `<bucket>.<name>`: the cumulative
  counters of the unit's committed progress (`windows_emitted`, `results_emitted`,
  `late_records`, `late_contributions`; exact, they travel in the Kafka transaction) and gauges
  (`watermark`, `watermark_lag_ms`, `merge_rate` (data sets/s), `commit_latency_ms`,
  `result_latency_ms` (of the last commit that closed windows), `checkpoint` (the committed
  checkpoint's fields, comma-separated: the full one, then its deltas) and `view_ms` (the open
  windows as merged at this time are in it), `owner`, `updated_ms`);
- the task's `mars:{<task>}:stats` field `late_reducer` = sum of the units' `late_records`,
  kept exact by a script that adds only the growth of each unit's absolute count;
- per process, hash `mars:reducer:<member id>` with `owned_units` (JSON list), `merge_rate`,
  `cpu` (its CPU share, for the elasticity advice), `updated_ms`; it expires when the process
  stops refreshing.

Prometheus (labels `task`, `bucket`): `mars_reducer_datasets_merged_total`,
`mars_reducer_windows_emitted_total`, `mars_reducer_result_rows_total`,
`mars_reducer_late_contributions_total`, `mars_reducer_late_records_total` (counted after the
transaction commits, so a restarted owner's replay does not count twice; data sets merged are
counted as read and do), `mars_reducer_commit_duration_seconds{task}`,
`mars_reducer_result_latency_seconds{task}` (wall clock at commit minus window end + grace, per
closed window: for live traffic, how long a closable window waited for its result),
`mars_reducer_watermark_seconds`, `mars_reducer_watermark_lag_seconds` (wall clock minus
watermark), `mars_reducer_checkpoint_bytes`, `mars_reducer_checkpoint_duration_seconds{task}`,
`mars_reducer_checkpoint_deltas_total` (checkpoints written as deltas),
`mars_reducer_spilled_windows_total` (merged frames written to disk past the state budget),
`mars_reducer_owned_units`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from mars.store.reducer_stats import Figure, ReducerStats

SECONDS_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
LATENCY_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 300.0, 3600.0)


@dataclass(frozen=True, slots=True, kw_only=True)
class UnitGauges:
    """Point-in-time measurements of one unit."""

    watermark: int | None
    watermark_lag_ms: int | None
    merge_rate: float
    load: float | None  # partial groups merged per second, smoothed (the leader balances it)
    backlog: int | None  # data sets not merged after the last read (the leader's pressure)
    commit_latency_ms: float | None
    result_latency_ms: int | None
    checkpoint: str | None  # fields of the committed chain, comma-separated (pull queries)
    view_ms: int | None  # the checkpoint holds the open windows as merged at this time
    owner: str
    updated_ms: int


@dataclass(frozen=True, slots=True, kw_only=True)
class CommitFigures:
    """What one committed transaction of a unit carried."""

    windows: int
    rows: int
    late_contributions: int
    late_records: int
    seconds: float
    result_latencies_s: list[float]


class _Instruments:
    def __init__(self, registry: CollectorRegistry) -> None:
        unit = ["task", "bucket"]

        def counter(name: str, doc: str) -> Counter:
            return Counter(f"mars_reducer_{name}", doc, unit, registry=registry)

        def gauge(name: str, doc: str) -> Gauge:
            return Gauge(f"mars_reducer_{name}", doc, unit, registry=registry)

        def histogram(name: str, doc: str, buckets: tuple[float, ...]) -> Histogram:
            return Histogram(
                f"mars_reducer_{name}", doc, ["task"], buckets=buckets, registry=registry
            )

        self.merged = counter("datasets_merged", "Data sets merged (replays after recovery too).")
        self.windows = counter("windows_emitted", "Windows closed and committed.")
        self.rows = counter("result_rows", "Result rows committed to the results topic.")
        self.late_contributions = counter("late_contributions", "Late partials sent aside.")
        self.late_records = counter("late_records", "Records in the late partials.")
        self.watermark = gauge("watermark_seconds", "The unit's closed watermark (epoch s).")
        self.watermark_lag = gauge("watermark_lag_seconds", "Wall clock minus the watermark.")
        self.checkpoint_bytes = gauge("checkpoint_bytes", "Size of the last checkpoint.")
        self.checkpoint_deltas = counter(
            "checkpoint_deltas", "Checkpoints written as deltas (the groups changed only)."
        )
        self.spilled = counter(
            "spilled_windows", "Open windows' merged frames written to disk past the budget."
        )
        self.commit_seconds = histogram(
            "commit_duration_seconds", "One Kafka transaction commit.", SECONDS_BUCKETS
        )
        self.result_latency = histogram(
            "result_latency_seconds",
            "Wall clock at commit minus the window's end + grace, per closed window.",
            LATENCY_BUCKETS,
        )
        self.checkpoint_seconds = histogram(
            "checkpoint_duration_seconds", "Encoding and writing one checkpoint.", SECONDS_BUCKETS
        )
        self.owned_units = Gauge(
            "mars_reducer_owned_units", "Units this process runs.", registry=registry
        )
        self.unit_gauges = (self.watermark, self.watermark_lag, self.checkpoint_bytes)


class ReducerMetrics:
    """One instance per process, shared by its owners (Prometheus objects are thread-safe)."""

    def __init__(self, stats: ReducerStats, *, registry: CollectorRegistry | None = None) -> None:
        self._stats = stats
        self.registry = registry or CollectorRegistry()
        self._prom = _Instruments(self.registry)

    # -- Prometheus, as things happen -----------------------------------------------------

    def merged(self, task_id: str, bucket: int, datasets: int) -> None:
        if datasets:
            self._prom.merged.labels(task_id, str(bucket)).inc(datasets)

    def committed(self, task_id: str, bucket: int, figures: CommitFigures) -> None:
        prom, labels = self._prom, (task_id, str(bucket))
        prom.windows.labels(*labels).inc(figures.windows)
        prom.rows.labels(*labels).inc(figures.rows)
        prom.late_contributions.labels(*labels).inc(figures.late_contributions)
        prom.late_records.labels(*labels).inc(figures.late_records)
        prom.commit_seconds.labels(task_id).observe(figures.seconds)
        for latency in figures.result_latencies_s:
            prom.result_latency.labels(task_id).observe(latency)

    def checkpointed(
        self, task_id: str, bucket: int, *, size: int, seconds: float, delta: bool
    ) -> None:
        self._prom.checkpoint_bytes.labels(task_id, str(bucket)).set(size)
        if delta:
            self._prom.checkpoint_deltas.labels(task_id, str(bucket)).inc()
        self._prom.checkpoint_seconds.labels(task_id).observe(seconds)

    def spilled(self, task_id: str, bucket: int, windows: int) -> None:
        if windows:
            self._prom.spilled.labels(task_id, str(bucket)).inc(windows)

    def unit_stopped(self, task_id: str, bucket: int) -> None:
        """The unit left this process: its gauges go (its counters stay, as counters do)."""
        for gauge in self._prom.unit_gauges:
            with contextlib.suppress(KeyError):  # never set
                gauge.remove(task_id, str(bucket))

    # -- Redis (and the gauges), about once a second --------------------------------------

    def publish_unit(
        self,
        task_id: str,
        bucket: int,
        *,
        counters: Mapping[str, int],
        gauges: UnitGauges,
    ) -> None:
        if gauges.watermark is not None and gauges.watermark_lag_ms is not None:
            self._prom.watermark.labels(task_id, str(bucket)).set(gauges.watermark / 1000)
            self._prom.watermark_lag.labels(task_id, str(bucket)).set(
                gauges.watermark_lag_ms / 1000
            )
        latency = gauges.commit_latency_ms
        figures: dict[str, Figure] = {k: v for k, v in counters.items() if k != "late_records"}
        figures.update(
            watermark=gauges.watermark,
            watermark_lag_ms=gauges.watermark_lag_ms,
            merge_rate=round(gauges.merge_rate, 1),
            load=None if gauges.load is None else round(gauges.load, 1),
            backlog=gauges.backlog,
            commit_latency_ms=None if latency is None else round(latency, 1),
            result_latency_ms=gauges.result_latency_ms,
            checkpoint=gauges.checkpoint,
            view_ms=gauges.view_ms,
            owner=gauges.owner,
            updated_ms=gauges.updated_ms,
        )
        self._stats.publish_unit(
            task_id, bucket, figures, late_records=counters.get("late_records", 0)
        )

    def publish_process(
        self,
        member_id: str,
        *,
        owned_units: Iterable[str],
        merge_rate: float,
        cpu: float | None,
        now_ms: int,
    ) -> None:
        owned = list(owned_units)
        self._prom.owned_units.set(len(owned))
        self._stats.publish_process(
            member_id, owned_units=owned, merge_rate=merge_rate, cpu=cpu, now_ms=now_ms
        )

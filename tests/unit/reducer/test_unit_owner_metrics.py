"""`UnitOwnerMetrics`: what one owner publishes, over a recording stand-in for Redis."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from mars.store.reducer_stats import Figure, ReducerStats
from reducer.open_windows import LateContribution
from reducer.progress_record import CheckpointRef, ProgressRecord
from reducer.reducer_metrics import ReducerMetrics
from reducer.unit_owner_metrics import UnitOwnerMetrics


class RecordingStats:
    def __init__(self) -> None:
        self.units: list[tuple[str, int, dict[str, Figure], int]] = []

    def publish_unit(
        self, task: str, bucket: int, figures: Mapping[str, Figure], *, late_records: int
    ) -> None:
        self.units.append((task, bucket, dict(figures), late_records))


def owner_metrics() -> tuple[UnitOwnerMetrics, RecordingStats, ReducerMetrics]:
    stats = RecordingStats()
    reducer = ReducerMetrics(cast(ReducerStats, stats))
    return (
        UnitOwnerMetrics(reducer, task_id="t", bucket=3, member_id="reducer-a"),
        stats,
        reducer,
    )


def sample(reducer: ReducerMetrics, name: str, **labels: str) -> Any:
    return reducer.registry.get_sample_value(name, labels)


PROGRESS = ProgressRecord(
    closed_watermark=900,
    rseqs={3: 4},
    merged={3: 3},
    counters={"windows_emitted": 2, "late_records": 5},
    checkpoint=CheckpointRef(1, "abc"),
)


def test_a_commit_is_published_with_its_latencies_and_the_committed_counters() -> None:
    metrics, stats, reducer = owner_metrics()
    metrics.read(merged=2, groups=40, backlog=7)
    late = LateContribution(bucket=3, seq=2, window_start=0, key=("a",), states=[4], records=4)
    metrics.committed(closes_at=[800, 950], rows=6, late=[late], seconds=0.25, now=1_000)
    metrics.publish(1_000, committed=PROGRESS, watermark=900, view_ms=990, force=True)

    [(task, bucket, figures, late_records)] = stats.units
    assert (task, bucket, late_records) == ("t", 3, 5)
    assert figures["windows_emitted"] == 2 and "late_records" not in figures
    assert figures["commit_latency_ms"] == 250.0
    assert figures["result_latency_ms"] == 200  # the longest wait: 1000 - 800
    assert figures["backlog"] == 7 and figures["watermark_lag_ms"] == 100
    assert figures["checkpoint"] == "1:abc" and figures["view_ms"] == 990
    assert figures["owner"] == "reducer-a" and figures["updated_ms"] == 1_000
    unit = {"task": "t", "bucket": "3"}
    assert sample(reducer, "mars_reducer_datasets_merged_total", **unit) == 2
    assert sample(reducer, "mars_reducer_result_rows_total", **unit) == 6
    assert sample(reducer, "mars_reducer_late_records_total", **unit) == 4


def test_publishing_waits_a_second_unless_forced() -> None:
    metrics, stats, _ = owner_metrics()
    metrics.publish(1_000, committed=PROGRESS, watermark=None, view_ms=None, force=False)
    metrics.publish(1_001, committed=PROGRESS, watermark=None, view_ms=None, force=False)
    assert len(stats.units) == 1
    metrics.publish(1_002, committed=PROGRESS, watermark=None, view_ms=None, force=True)
    assert len(stats.units) == 2


def test_without_metrics_only_the_merge_rate_is_kept() -> None:
    metrics = UnitOwnerMetrics(None, task_id="t", bucket=0, member_id="m")
    metrics.read(merged=5, groups=10, backlog=0)
    metrics.committed(closes_at=[1], rows=1, late=[], seconds=0.1, now=2)
    metrics.publish(2, committed=PROGRESS, watermark=None, view_ms=None, force=True)
    metrics.stopped()
    assert metrics.merge_rate == 0.0  # less than a second since it started

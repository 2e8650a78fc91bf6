"""Trimming a partition's records to the ones above the applied offset, and paused-time
bookkeeping that rides along with the next apply."""

from __future__ import annotations

from mapper.batch_writer import WriteOutcome, unapplied
from mapper.mapper_metrics import MapperMetrics
from mars.engine.records import SourceRecord


def _records(offsets: list[int]) -> list[SourceRecord]:
    return [SourceRecord(partition=0, offset=o, value=b"{}") for o in offsets]


def test_unapplied_keeps_only_records_above_the_applied_offset() -> None:
    records = _records([3, 4, 7, 8, 12])  # gaps: compaction or transaction markers
    assert unapplied(records, -1) is records
    assert [r.offset for r in unapplied(records, 4)] == [7, 8, 12]
    assert [r.offset for r in unapplied(records, 5)] == [7, 8, 12]
    assert [r.offset for r in unapplied(records, 12)] == []
    assert unapplied([], 3) == []


def test_paused_time_is_handed_to_exactly_one_apply() -> None:
    metrics = MapperMetrics()
    metrics.add_paused("t", 300)
    counters = metrics.take_unflushed_paused("t")
    assert counters == {"paused_ms": 300}
    metrics.return_unflushed_paused("t", counters)  # the apply did not happen
    metrics.add_paused("t", 200)
    assert metrics.take_unflushed_paused("t") == {"paused_ms": 500}
    assert metrics.take_unflushed_paused("t") == {}
    metrics.record_write(
        "t", WriteOutcome(applied=True, records_in=10, bad=1, late=2, datasets=3), seconds=0.01
    )
    snapshot = metrics.snapshot()["t"]
    assert snapshot["paused_ms"] == 500 and snapshot["records_in"] == 10
    assert snapshot["batches"] == 1 and snapshot["datasets"] == 3

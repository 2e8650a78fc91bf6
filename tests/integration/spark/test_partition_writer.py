"""The executor-side writer against real Redis, without Spark: chunking, crash and re-run."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
import redis

from mars.config import KafkaSettings, RedisSettings
from mars.sql import parse_task
from mars.store import SeqStore
from mars.tasks.spec import TaskSpec
from spark.offsets import (
    ALL_PARTITIONS,
    EARLIEST,
    LATEST,
    OffsetRange,
    OffsetSpecError,
    parse_offsets_spec,
    resolve_ranges,
)
from spark.partition_writer import (
    PartitionBackfillWriter,
    WriterConfig,
    backfill_source_id,
)
from spark.record_columns import RecordColumns, RecordOrderError, as_columns, partition_runs
from tests.integration.spark.helpers import merged_windows
from tests.recording_sink import RecordingSink

SQL = (
    "SELECT k, count(*) AS c FROM S GROUP BY k WINDOWING 10 ms GRACE 5 ms "
    "WITH (event_time='t', event_time_format='epoch_ms', buckets=4)"
)


def _records() -> list[tuple[int, int, bytes]]:
    """Two partitions with disorder beyond grace (some late) and two malformed values."""
    times = [0, 3, 12, 1, 25, 14, 30, 9, 31, 40, 22, 41, 55, 38, 56, 60]
    out: list[tuple[int, int, bytes]] = []
    for partition in (0, 1):
        for offset, t in enumerate(times):
            value = json.dumps({"k": f"k{(offset + partition) % 3}", "t": t + partition}).encode()
            out.append((partition, offset, value))
        out.append((partition, len(times), b"{broken"))
    return out


def _writer(client: redis.Redis, spec: TaskSpec, sink: RecordingSink, chunk: int) -> Any:
    config = WriterConfig(
        spec=spec.to_json_dict(),
        job="j",
        redis=RedisSettings(url="redis://unused"),
        kafka=KafkaSettings(bootstrap_servers="unused"),
        source_name="S",
        chunk_size=chunk,
    )
    return PartitionBackfillWriter(
        config, store=SeqStore(client), side_records=sink, clock_ms=lambda: 1
    )


def _spec() -> TaskSpec:
    return parse_task(SQL, task_id="w" + uuid.uuid4().hex[:10])


def test_result_does_not_depend_on_chunks_crashes_or_reruns(redis_client: redis.Redis) -> None:
    store = SeqStore(redis_client)
    whole = _spec()
    sink = RecordingSink()
    summaries = list(_writer(redis_client, whole, sink, chunk=1000).write(_records()))
    assert [s.records_in for s in summaries] == [17, 17]
    assert sum(s.late for s in summaries) == len(sink.late) > 0
    assert sum(s.bad for s in summaries) == len(sink.bad) == 2

    crashed = _spec()
    failing = RecordingSink(fail_on=4)
    with pytest.raises(RuntimeError):
        list(_writer(redis_client, crashed, failing, chunk=3).write(_records()))
    retry = RecordingSink()
    list(_writer(redis_client, crashed, retry, chunk=5).write(_records()))
    rerun = list(_writer(redis_client, crashed, RecordingSink(), chunk=2).write(_records()))
    assert [s.skipped for s in rerun] == [17, 17] and all(s.records_in == 0 for s in rerun)

    assert merged_windows(store, redis_client, crashed) == merged_windows(
        store, redis_client, whole
    )
    ids = [backfill_source_id("j", p) for p in (0, 1)]
    assert store.read_source_states(crashed.id, ids) == store.read_source_states(whole.id, ids)
    counters = ("records_in", "accepted", "bad", "late", "filtered")
    whole_stats, crashed_stats = store.counters.read(whole.id), store.counters.read(crashed.id)
    assert {c: whole_stats.get(c) for c in counters} == {c: crashed_stats.get(c) for c in counters}
    # The crash hit before its chunk's side records went out: each late record is sent once.
    late_offsets = sorted((r.partition, r.offset) for r in sink.late)
    assert sorted((r.partition, r.offset) for r in failing.late + retry.late) == late_offsets


def test_offset_specs_resolve_against_watermarks() -> None:
    assert parse_offsets_spec("earliest", topic="S") == {ALL_PARTITIONS: EARLIEST}
    assert parse_offsets_spec(' {"S": {"1": 5}} ', topic="S") == {1: 5}
    with pytest.raises(OffsetSpecError):
        parse_offsets_spec('{"other": {"0": 1}}', topic="S")
    with pytest.raises(OffsetSpecError):
        parse_offsets_spec("yesterday", topic="S")
    ranges = resolve_ranges(
        starting={1: 5, 2: 500},
        ending={ALL_PARTITIONS: LATEST, 0: 7},
        watermarks={0: (2, 10), 1: (0, 20), 2: (0, 30)},
    )
    assert ranges == [
        OffsetRange(partition=0, start=2, end=7),
        OffsetRange(partition=1, start=5, end=20),
        OffsetRange(partition=2, start=30, end=30),
    ]


def test_columns_keep_partition_order_and_refuse_reordering(redis_client: redis.Redis) -> None:
    records = _records()
    by_rows = _spec()
    list(_writer(redis_client, by_rows, RecordingSink(), chunk=4).write(records))
    # The same records as column batches that cut partitions mid-batch, plus a tombstone.
    by_columns = _spec()
    sink = RecordingSink()
    tombstone = (1, len(records) // 2 + 1, None)
    batches = [
        RecordColumns(
            partitions=[r[0] for r in part],
            offsets=[r[1] for r in part],
            values=[r[2] for r in part],
        )
        for part in (records[:10], records[10:25], [*records[25:], tombstone])
    ]
    summaries = list(_writer(redis_client, by_columns, sink, chunk=4).write_columns(batches))
    assert [s.records_in for s in summaries] == [17, 18]
    assert [r.value for r in sink.bad].count(b"") == 1  # the tombstone is a bad record
    store = SeqStore(redis_client)
    assert merged_windows(store, redis_client, by_columns) == merged_windows(
        store, redis_client, by_rows
    )

    swapped = [records[1], records[0], *records[2:]]
    with pytest.raises(RecordOrderError):
        list(_writer(redis_client, _spec(), RecordingSink(), chunk=4).write(swapped))
    assert list(partition_runs([3, 3, 1, 1, 1, 3])) == [(3, 0, 2), (1, 2, 5), (3, 5, 6)]
    assert list(as_columns([(0, 1, b"a"), (0, 2, b"b"), (0, 3, b"c")], 2)) == [
        RecordColumns(partitions=(0, 0), offsets=(1, 2), values=(b"a", b"b")),
        RecordColumns(partitions=(0,), offsets=(3,), values=(b"c",)),
    ]

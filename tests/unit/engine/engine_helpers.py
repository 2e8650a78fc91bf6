"""Helpers shared by the engine tests: building specs and records, merging a run's partials."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from datasketches import hll_sketch, hll_union, tgt_hll_type

from mars.engine.dataset import OpenWindows, decode_dataset, merge_into
from mars.engine.preaggregate import Preaggregator
from mars.engine.records import RejectedRecord, SourceRecord
from mars.tasks.spec import (
    AggFunc,
    AggregateCall,
    EventTime,
    GroupKey,
    OutputColumn,
    TaskOptions,
    TaskSpec,
    TimeFormat,
    WindowSpec,
)


def make_spec(
    *,
    aggregates: Sequence[tuple[AggFunc, str | None, str]] = ((AggFunc.COUNT, None, "n"),),
    keys: Sequence[str] = ("k",),
    size_ms: int = 2,
    slide_ms: int | None = None,
    grace_ms: int = 0,
    session: bool = False,
    where: str | None = None,
    time_format: TimeFormat = TimeFormat.EPOCH_MS,
    buckets: int = 4,
) -> TaskSpec:
    calls = tuple(AggregateCall(func=f, argument=a, alias=alias) for f, a, alias in aggregates)
    return TaskSpec(
        id="t",
        sql="(built in tests)",
        source_topic="S",
        event_time=EventTime(
            field=None if time_format is TimeFormat.PROCESSING else "ts", format=time_format
        ),
        window=WindowSpec(
            size_ms=size_ms, slide_ms=slide_ms or size_ms, grace_ms=grace_ms, session=session
        ),
        group_keys=tuple(GroupKey(name=k, expression=k) for k in keys),
        aggregates=calls,
        outputs=tuple(
            OutputColumn(name=n, expression=n) for n in [*keys, *(c.alias for c in calls)]
        ),
        where=where,
        options=TaskOptions(buckets=buckets),
    )


def json_records(rows: Sequence[dict[str, Any]], partition: int = 0) -> list[SourceRecord]:
    return [
        SourceRecord(partition=partition, offset=i, value=json.dumps(row).encode())
        for i, row in enumerate(rows)
    ]


def run_in_batches(
    spec: TaskSpec, records: Sequence[SourceRecord], batch_sizes: Sequence[int], now_ms: int = 0
) -> tuple[OpenWindows, list[RejectedRecord], list[RejectedRecord], dict[int, int]]:
    """Feed `records` in consecutive batches, carrying stream times like the mapper does."""
    preaggregator = Preaggregator.for_spec(spec)
    stream_times: dict[int, int] = {}
    windows: OpenWindows = {}
    late: list[RejectedRecord] = []
    bad: list[RejectedRecord] = []
    position, turn = 0, 0
    while position < len(records):
        size = batch_sizes[turn % len(batch_sizes)]
        batch = records[position : position + size]
        position, turn = position + size, turn + 1
        partials = preaggregator.run(batch, dict(stream_times), now_ms=now_ms)
        assert partials.records_in == partials.accepted + len(partials.late) + len(partials.bad)
        stream_times = partials.stream_times
        late.extend(partials.late)
        bad.extend(partials.bad)
        for data in partials.datasets.values():
            dataset = decode_dataset(data)
            merge_into(windows, dataset)
    return windows, late, bad, stream_times


def canonical_hll(state: bytes) -> float:
    union = hll_union(12)
    union.update(hll_sketch.deserialize(state))
    return float(union.get_result(tgt_hll_type.HLL_8).get_estimate())

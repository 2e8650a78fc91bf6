"""The columnar inputs (`PartitionBatch`, `SourceBatch`) read like the records they hold, and
pre-aggregating them gives exactly what pre-aggregating the `SourceRecord`s gives."""

from __future__ import annotations

import json

from engine_helpers import make_spec

from mars.engine.joined_values import JoinedValues
from mars.engine.preaggregate import Preaggregator
from mars.engine.records import PartitionBatch, SourceBatch, SourceRecord


def test_partition_batch_reads_as_source_records() -> None:
    part = PartitionBatch(3, [10, 11, 14], [b"a", b"b", b"c"])
    assert len(part) == 3
    assert part[0] == SourceRecord(partition=3, offset=10, value=b"a")
    assert part[-1] == SourceRecord(partition=3, offset=14, value=b"c")
    assert list(part[1:]) == [
        SourceRecord(partition=3, offset=11, value=b"b"),
        SourceRecord(partition=3, offset=14, value=b"c"),
    ]


def test_partition_batch_after_cuts_at_the_applied_offset() -> None:
    part = PartitionBatch(0, [10, 11, 14], [b"a", b"b", b"c"])
    assert part.after(9) is part
    assert part.after(11).offsets == [14] and part.after(11).values == [b"c"]
    assert part.after(12).offsets == [14]
    assert len(part.after(14)) == 0
    assert len(PartitionBatch(0).after(5)) == 0


def test_source_batch_of_partitions_takes_both_forms() -> None:
    batch = SourceBatch.of_partitions(
        {
            1: PartitionBatch(1, [5, 6], [b"x", b"y"]),
            2: [SourceRecord(partition=2, offset=0, value=b"z")],
        }
    )
    assert list(batch.values) == [b"x", b"y", b"z"]
    assert list(batch.partitions) == [1, 1, 2]
    assert list(batch.offsets) == [5, 6, 0]
    assert batch.last_offsets() == {1: 6, 2: 0}
    assert batch.rejected(2, "why").offset == 0 and batch.rejected(2, "why").value == b"z"


def test_columns_and_records_pre_aggregate_alike() -> None:
    rows = [
        (0, {"ts": 5, "k": "a"}),
        (1, {"ts": 1, "k": "b"}),
        (0, {"ts": 0, "k": "a"}),  # late in partition 0 (window [0, 2) closed at 5)
        (1, {"ts": 3}),  # no key: NULL group
        (0, {"k": "c"}),  # no event time: bad
        (1, None),  # not JSON: bad
        (1, {"ts": 4, "k": "b"}),
    ]
    offsets = {0: 100, 1: 7}
    records = []
    for partition, row in rows:
        value = b"{oops" if row is None else json.dumps(row).encode()
        records.append(SourceRecord(partition=partition, offset=offsets[partition], value=value))
        offsets[partition] += 1
    preaggregator = Preaggregator.for_spec(make_spec(buckets=3))
    stream_times: dict[int, int | None] = {0: 2, 1: None}
    from_records = preaggregator.run(records, stream_times, now_ms=0)
    from_columns = preaggregator.run(SourceBatch.of(records), stream_times, now_ms=0)
    assert from_columns == from_records
    assert len(from_records.bad) == 2 and len(from_records.late) == 1
    assert from_records.last_offsets == {0: 102, 1: 10}
    # Regrouped by partition, values as a list or joined (the native consumer's): the same
    # partials (lateness is per partition).
    for form in (list, JoinedValues.of):
        by_partition = SourceBatch.of_partitions(
            {
                p: PartitionBatch(
                    p,
                    [r.offset for r in records if r.partition == p],
                    form([r.value for r in records if r.partition == p]),
                )
                for p in (0, 1)
            }
        )
        regrouped = preaggregator.run(by_partition, stream_times, now_ms=0)
        assert regrouped.datasets == from_records.datasets
        assert regrouped.last_offsets == from_records.last_offsets
        assert sorted(regrouped.bad, key=lambda r: r.offset) == sorted(
            from_records.bad, key=lambda r: r.offset
        )
        assert sorted(regrouped.late, key=lambda r: r.offset) == sorted(
            from_records.late, key=lambda r: r.offset
        )

"""The values that flow into and out of the batch engine."""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import overload

from mars.engine.joined_values import JoinedValues


@dataclass(frozen=True, slots=True, kw_only=True)
class SourceRecord:
    """One Kafka record of the task's source topic (only what the engine needs)."""

    partition: int
    offset: int
    value: bytes


class PartitionBatch(Sequence[SourceRecord]):
    """One partition's share of a batch, in offset order, as two parallel columns: offsets and
    values (a list, or the native consumer's `JoinedValues`: no object per record).

    It still reads as a sequence of `SourceRecord`s (made on access) where that is convenient.
    """

    __slots__ = ("offsets", "partition", "values")

    def __init__(
        self,
        partition: int,
        offsets: list[int] | None = None,
        values: Sequence[bytes] | None = None,
    ) -> None:
        self.partition = partition
        self.offsets: list[int] = [] if offsets is None else offsets
        self.values: Sequence[bytes] = [] if values is None else values

    def __len__(self) -> int:
        return len(self.offsets)

    @overload
    def __getitem__(self, index: int) -> SourceRecord: ...

    @overload
    def __getitem__(self, index: slice) -> PartitionBatch: ...

    def __getitem__(self, index: int | slice) -> SourceRecord | PartitionBatch:
        if isinstance(index, slice):
            return PartitionBatch(self.partition, self.offsets[index], self.values[index])
        return SourceRecord(
            partition=self.partition, offset=self.offsets[index], value=self.values[index]
        )

    def after(self, offset: int) -> PartitionBatch:
        """The records above `offset` (a bisect on the offsets, no copy when all are)."""
        if not self.offsets or self.offsets[0] > offset:
            return self
        return self[bisect.bisect_right(self.offsets, offset) :]


# A consumed batch: topic -> partition -> its records.
TopicBatches = dict[str, dict[int, PartitionBatch]]


@dataclass(frozen=True, slots=True, kw_only=True)
class SourceBatch:
    """A batch as parallel columns (one entry per record, in partition order): the engine's
    input, built without one object per record. Row `i` is record
    (`partitions[i]`, `offsets[i]`, `values[i]`)."""

    values: Sequence[bytes]
    partitions: Sequence[int]
    offsets: Sequence[int]
    # partition -> last offset, when the builder knows it (`of_partitions`): no pass over rows
    known_last_offsets: Mapping[int, int] | None = None

    def __len__(self) -> int:
        return len(self.values)

    @classmethod
    def of(cls, records: Iterable[SourceRecord]) -> SourceBatch:
        records = list(records)
        return cls(
            values=[r.value for r in records],
            partitions=[r.partition for r in records],
            offsets=[r.offset for r in records],
        )

    @classmethod
    def of_partitions(cls, parts: Mapping[int, Sequence[SourceRecord]]) -> SourceBatch:
        """The records of each partition, partition after partition. When every partition's
        values are `JoinedValues` (the native consumer's), so are the batch's."""
        parts = {partition: records for partition, records in parts.items() if records}
        joined = [
            records.values
            for records in parts.values()
            if isinstance(records, PartitionBatch) and isinstance(records.values, JoinedValues)
        ]
        all_joined = bool(joined) and len(joined) == len(parts)
        values: list[bytes] = []
        partitions: list[int] = []
        offsets: list[int] = []
        last: dict[int, int] = {}
        for partition, records in parts.items():
            if isinstance(records, PartitionBatch):
                if not all_joined:
                    values += records.values
                offsets += records.offsets
                partitions += [partition] * len(records)
            else:
                values += [r.value for r in records]
                offsets += [r.offset for r in records]
                partitions += [r.partition for r in records]
            last[partition] = offsets[-1]  # records are in offset order
        return cls(
            values=JoinedValues.concat(joined) if all_joined else values,
            partitions=partitions,
            offsets=offsets,
            known_last_offsets=last,
        )

    def rejected(self, row: int, reason: str) -> RejectedRecord:
        """Row `row` as a bad or late record."""
        return RejectedRecord(
            partition=self.partitions[row],
            offset=self.offsets[row],
            value=self.values[row],
            reason=reason,
        )

    def last_offsets(self) -> dict[int, int]:
        """partition -> its last (largest) offset in the batch."""
        if self.known_last_offsets is not None:
            return dict(self.known_last_offsets)
        return dict(zip(self.partitions, self.offsets, strict=True))


@dataclass(frozen=True, slots=True, kw_only=True)
class RejectedRecord:
    """A record that did not make it into a window: bad (dead-letter) or late.

    Carries the original bytes, so the side topic receives exactly what was produced.
    """

    partition: int
    offset: int
    value: bytes
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class BatchPartials:
    """The result of pre-aggregating one batch of one task.

    `datasets` maps bucket -> encoded data set (`mars.engine.dataset`), non-empty buckets only;
    `last_window_start_ms` is the latest window start in them (None when there are none): the
    bucket-layout fence in Redis checks it (mars.tasks.bucket_layout).
    `stream_times` / `last_offsets` are per partition after this batch: the mapper stores them
    with the applied offsets so the next batch (or a restarted mapper) continues the same
    lateness decisions; so are `key_clocks` (`mars.engine.key_clocks`). Counts:
    `records_in == accepted + len(late) + len(bad)`, and
    `filtered` (WHERE false or NULL) is the part of `accepted` that contributes to no window.
    """

    datasets: dict[int, bytes]
    last_window_start_ms: int | None = None
    late: list[RejectedRecord] = field(default_factory=list)
    bad: list[RejectedRecord] = field(default_factory=list)
    stream_times: dict[int, int] = field(default_factory=dict)
    key_clocks: dict[int, bytes] = field(default_factory=dict)  # watermark = 'key' only
    last_offsets: dict[int, int] = field(default_factory=dict)
    records_in: int = 0
    accepted: int = 0
    filtered: int = 0

"""Source records as columns: the form in which executors receive them (an Arrow batch's
`partition`, `offset` and `value` columns as Python lists), and the checks on their order.

A backfill decides lateness in partition order, so every batch must hold runs of one partition
each with strictly increasing offsets; `check_increasing` refuses anything else rather than
letting a reordering change the results silently.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

RawRecord = tuple[int, int, bytes]  # (partition, offset, value)


class RecordOrderError(ValueError):
    """Records of a partition arrived out of offset order (the source broke its contract)."""


@dataclass(frozen=True, slots=True)
class RecordColumns:
    """One batch of source records, column by column (equal lengths). A null value (a Kafka
    tombstone) is kept as None; the writer hands it to the engine as empty bytes (bad)."""

    partitions: Sequence[int]
    offsets: Sequence[int]
    values: Sequence[bytes | None]

    def __len__(self) -> int:
        return len(self.offsets)


def as_columns(records: Iterable[RawRecord], batch_size: int) -> Iterator[RecordColumns]:
    """Row tuples regrouped into column batches of up to `batch_size` records."""
    iterator = iter(records)
    while batch := list(itertools.islice(iterator, batch_size)):
        partitions, offsets, values = zip(*batch, strict=True)
        yield RecordColumns(partitions=partitions, offsets=offsets, values=values)


def partition_runs(partitions: Sequence[int]) -> Iterator[tuple[int, int, int]]:
    """(partition, lo, hi) for each run of equal partitions; one run in the common case."""
    if not partitions:
        return
    first = partitions[0]
    if partitions[-1] == first and partitions.count(first) == len(partitions):
        yield first, 0, len(partitions)
        return
    lo = 0
    for partition, run in itertools.groupby(partitions):
        hi = lo + sum(1 for _ in run)
        yield partition, lo, hi
        lo = hi


def check_increasing(partition: int, offsets: Sequence[int], *, after: int) -> None:
    """Raise `RecordOrderError` unless `offsets` strictly increase and start above `after`."""
    if not offsets:
        return
    if offsets[0] <= after or any(b <= a for a, b in itertools.pairwise(offsets)):
        raise RecordOrderError(f"partition {partition}: offsets not increasing after {after}")

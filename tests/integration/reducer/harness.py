"""Test doubles around the real Redis: a scripted mapper, a fake clock, an in-memory output."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from mars.config import ReducerSettings
from mars.engine.preaggregate import Preaggregator
from mars.engine.records import SourceRecord
from mars.store import SeqStore, SourceState
from mars.tasks.spec import TaskSpec
from mars.tasks.topics import PROGRESS_TOPIC
from reducer.output import OutRecord, ToWrite, flat_records
from reducer.progress_record import ProgressRecord
from reducer.unit_owner import OwnerWiring, UnitOwner
from reducer.wakeups import WriteWakeups


@dataclass
class FakeClock:
    now_ms: int = 1_000_000

    def __call__(self) -> int:
        return self.now_ms

    def advance(self, ms: int) -> None:
        self.now_ms += ms


@dataclass
class ScriptedMapper:
    """Writes records through the real pre-aggregation and `apply_batch`, like the mapper."""

    spec: TaskSpec
    store: SeqStore
    clock: FakeClock
    partitions: int = 1
    offsets: dict[int, int] = field(default_factory=dict)
    stream_times: dict[int, int | None] = field(default_factory=dict)
    late: int = 0

    def __post_init__(self) -> None:
        self._pre = Preaggregator.for_spec(self.spec)

    def send(self, partition: int, rows: Iterable[dict[str, Any]]) -> None:
        """One batch of one partition."""
        first = self.offsets.get(partition, -1) + 1
        records = [
            SourceRecord(partition=partition, offset=first + i, value=json.dumps(row).encode())
            for i, row in enumerate(rows)
        ]
        partials = self._pre.run(
            records, {partition: self.stream_times.get(partition)}, now_ms=self.clock()
        )
        expected = {partition: self.offsets.get(partition, -1)}
        sources = {
            partition: SourceState(
                applied_offset=partials.last_offsets.get(partition, expected[partition]),
                stream_time_ms=partials.stream_times.get(partition),
            )
        }
        result = self.store.apply_batch(
            self.spec.id,
            expected=expected,
            sources=sources,
            datasets=partials.datasets,
            counters={"late": len(partials.late), "records_in": partials.records_in},
            now_ms=self.clock(),
        )
        assert result.applied
        self.offsets[partition] = sources[partition].applied_offset
        if partition in partials.stream_times:
            self.stream_times[partition] = partials.stream_times[partition]
        self.late += len(partials.late)

    def heartbeat(self, *, caught_up: bool, partitions: Sequence[int] | None = None) -> None:
        owned = range(self.partitions) if partitions is None else partitions
        self.store.heartbeat(
            self.spec.id,
            partition_count=self.partitions,
            partitions={p: caught_up for p in owned},
            now_ms=self.clock(),
        )


class MemoryOutput:
    """Stands in for Kafka: a commit appends the records; `progress` reads the newest one."""

    def __init__(self) -> None:
        self.commits: list[list[OutRecord]] = []
        self.starts = 0

    def start(self) -> None:
        self.starts += 1

    def commit(self, records: Iterable[ToWrite]) -> None:
        self.commits.append(list(flat_records(records)))

    def abort(self) -> None:
        pass

    def close(self) -> None:
        pass

    def records(self, topic: str) -> list[dict[str, Any]]:
        return [json.loads(r.value) for batch in self.commits for r in batch if r.topic == topic]

    def progress(self) -> ProgressRecord | None:
        values = self.records(PROGRESS_TOPIC)
        return ProgressRecord.from_bytes(json.dumps(values[-1]).encode()) if values else None


def make_owner(
    spec: TaskSpec,
    store: SeqStore,
    clock: FakeClock,
    output: MemoryOutput,
    *,
    buckets: Sequence[int] | None = None,
    max_datasets_per_read: int = 500,
    idle_heartbeat_timeout_ms: int = 3000,
    checkpoint_interval_ms: int = 2000,
    wakeups: WriteWakeups | None = None,
    poll_interval_ms: int = 100,
    idle_poll_interval_ms: int = 500,
) -> UnitOwner:
    covered = list(range(spec.options.buckets)) if buckets is None else list(buckets)
    return UnitOwner(
        spec=spec,
        unit_bucket=covered[0],
        buckets=covered,
        wiring=OwnerWiring(
            store=store,
            make_output=lambda: output,
            read_progress=output.progress,
            metrics=None,
            progress_topic=PROGRESS_TOPIC,
            progress_partitions=8,
            clock=clock,
            wakeups=wakeups,
        ),
        settings=ReducerSettings(
            poll_interval_ms=poll_interval_ms,
            idle_poll_interval_ms=idle_poll_interval_ms,
            max_datasets_per_read=max_datasets_per_read,
            idle_heartbeat_timeout_ms=idle_heartbeat_timeout_ms,
            checkpoint_interval_ms=checkpoint_interval_ms,
        ),
        member_id="test-member",
    )

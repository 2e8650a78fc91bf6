"""The batch writer against real Redis: a replayed batch (same offsets written twice) or a
batch overlapping what another writer applied changes nothing twice."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
import redis

from devtools.gen import GeneratorConfig, generate
from mapper.batch_writer import TaskBatchWriter
from mapper.source_state_book import TaskView
from mapper.task_router import ActiveTask
from mars.engine.preaggregate import Preaggregator
from mars.engine.records import SourceRecord
from mars.sql import parse_task
from mars.store import SeqStore, SourceState, TaskKeys
from tests.integration.mapper.mapper_harness import PAPER_SQL, merge_all, results_of
from tests.recording_sink import RecordingSink

pytestmark = pytest.mark.integration


@pytest.fixture
def task(redis_client: redis.Redis) -> Iterator[ActiveTask]:
    spec = parse_task(
        PAPER_SQL.format(topic="src"), task_id=f"replay-{uuid.uuid4().hex[:8]}", options=None
    )
    yield ActiveTask(spec=spec, preaggregator=Preaggregator.for_spec(spec))
    SeqStore(redis_client).delete_task(spec.id)


def _records(count: int) -> dict[int, list[SourceRecord]]:
    values = generate(GeneratorConfig(count=count, seed=5, disorder_s=120, span_s=900)).values
    by_partition: dict[int, list[SourceRecord]] = {0: [], 1: []}
    for index, value in enumerate(values):
        partition = index % 2
        offset = len(by_partition[partition])
        by_partition[partition].append(
            SourceRecord(partition=partition, offset=offset, value=value)
        )
    return by_partition


def _dump(client: redis.Redis, task_id: str) -> dict[bytes, bytes | None]:
    keys = client.scan_iter(match=TaskKeys(task_id).scan_pattern, count=1000)
    return {key: client.dump(key) for key in keys}


def _fresh_view() -> TaskView:
    return {0: SourceState(), 1: SourceState()}


def test_replayed_batch_changes_nothing(task: ActiveTask, redis_client: redis.Redis) -> None:
    store = SeqStore(redis_client)
    sink = RecordingSink()
    writer = TaskBatchWriter(store=store, side_records=sink, clock_ms=lambda: 1_000)
    records = _records(4000)

    first = writer.write(task, records, _fresh_view())
    assert first.applied and first.records_in == 4000 and first.late > 0
    before = _dump(redis_client, task.id)

    # The same offsets again, from a writer that believes nothing was applied (a restarted
    # mapper replaying from Kafka's committed offset, or a zombie after a rebalance).
    replay = writer.write(task, records, _fresh_view())

    assert not replay.applied and replay.rejected == 1
    assert _dump(redis_client, task.id) == before
    assert store.counters.read(task.id)["records_in"] == 4000


def test_overlapping_batch_applies_only_its_unseen_part(
    task: ActiveTask, redis_client: redis.Redis
) -> None:
    store = SeqStore(redis_client)
    writer = TaskBatchWriter(store=store, side_records=RecordingSink(), clock_ms=lambda: 1_000)
    records = _records(4000)
    head = {p: part[:1200] for p, part in records.items()}
    overlap = {p: part[600:] for p, part in records.items()}  # 600..1999 of each partition

    writer.write(task, head, _fresh_view())
    stale = _fresh_view()
    stale.update({p: SourceState(applied_offset=599) for p in stale})
    outcome = writer.write(task, overlap, stale)

    assert outcome.applied and outcome.rejected == 1
    assert outcome.records_in == 2 * 800  # only 1200..1999 of each partition
    assert stale[0].applied_offset == 1999 and stale[1].applied_offset == 1999

    # Exactly the same partials and counters as one writer applying everything once.
    reference = ActiveTask(
        spec=parse_task(PAPER_SQL.format(topic="src"), task_id=task.id + "-ref", options=None),
        preaggregator=task.preaggregator,
    )
    try:
        writer.write(reference, records, _fresh_view())
        assert results_of(task.spec, merge_all(store, task.spec)) == results_of(
            reference.spec, merge_all(store, reference.spec)
        )
        counted = {
            k: v
            for k, v in store.counters.read(task.id).items()
            if k not in ("batches", "datasets")
        }
        reference_counted = {
            k: v
            for k, v in store.counters.read(reference.id).items()
            if k not in ("batches", "datasets")
        }
        assert counted == reference_counted
    finally:
        store.delete_task(reference.id)


def _record_counters(store: SeqStore, task_id: str) -> dict[str, int]:
    """The per-record counters (batch and data set counts depend on how batches were cut)."""
    return {
        k: v for k, v in store.counters.read(task_id).items() if k not in ("batches", "datasets")
    }

"""Task cleanup and the latest-results list against a real Redis."""

from __future__ import annotations

import uuid

import redis

from mars.store import SeqStore, SourceState, TaskKeys


def _populate(store: SeqStore, task: str) -> None:
    store.apply_batch(
        task,
        expected={0: -1},
        sources={0: SourceState(applied_offset=3, stream_time_ms=10)},
        datasets={b: b"x" for b in range(5)},
        counters={"records_in": 4},
        now_ms=1,
    )
    store.heartbeat(task, partition_count=1, partitions={0: True}, now_ms=1)
    store.release(task, 2, 2)
    store.results.push(task, [{"window_start": 0, "count": 4}], keep=10)


def test_delete_task_removes_every_key_and_only_its_own(
    store: SeqStore, redis_client: redis.Redis
) -> None:
    base = uuid.uuid4().hex[:8]
    # A glob-looking id must not match its neighbours' keys.
    victim, neighbour = f"{base}*", f"{base}x"
    _populate(store, victim)
    _populate(store, neighbour)
    assert store.read_datasets(victim, 0, 1, 1) == [(1, b"x")]

    deleted = store.delete_task(victim)

    assert deleted == 14  # src, live, stats, results, 5 seq, 1 rseq, 4 data sets
    assert list(redis_client.scan_iter(match=TaskKeys(victim).scan_pattern)) == []
    assert store.read_sources(victim) == {} and store.counters.read(victim) == {}
    assert store.read_sources(neighbour)[0].applied_offset == 3
    assert store.backlog(neighbour, buckets=5).unreleased == 4
    assert store.delete_task(neighbour) == 14
    assert store.delete_task(neighbour) == 0


def test_delete_task_in_small_batches(redis_client: redis.Redis, task: str) -> None:
    store = SeqStore(redis_client, delete_batch=3)
    redis_client.mset({TaskKeys(task).seq(b): 1 for b in range(100)})
    assert store.delete_task(task) == 100


def test_results_list_is_bounded_and_newest_first(store: SeqStore, task: str) -> None:
    assert store.results.latest(task, 10) == []
    for window in range(6):
        store.results.push(
            task, [{"window_start": window * 60_000, "g": g, "count": g} for g in "ab"], keep=5
        )
    latest = store.results.latest(task, 100)
    assert len(latest) == 5
    assert [(r["window_start"], r["g"]) for r in latest] == [
        (300_000, "b"),
        (300_000, "a"),
        (240_000, "b"),
        (240_000, "a"),
        (180_000, "b"),
    ]
    assert store.results.latest(task, 2) == latest[:2]
    store.results.push(task, [], keep=5)
    assert len(store.results.latest(task, 100)) == 5

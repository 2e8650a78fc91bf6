"""Reducer side of the SEQ protocol against a real Redis: snapshot, read, release, backlog."""

from __future__ import annotations

import json
import threading
import time

import pytest
import redis

from mars.store import (
    Backlog,
    MissingDataSetError,
    ProtocolViolationError,
    SeqStore,
    SourceState,
    TaskKeys,
)


def _write(store: SeqStore, task: str, bucket: int, count: int, *, start_offset: int = -1) -> int:
    """Apply `count` one-data-set batches to partition 0; returns the last applied offset."""
    offset = start_offset
    for n in range(count):
        assert store.apply_batch(
            task,
            expected={0: offset},
            sources={0: SourceState(applied_offset=offset + 1, stream_time_ms=n)},
            datasets={bucket: f"d{offset + 1}".encode()},
            counters={},
            now_ms=n,
        ).applied
        offset += 1
    return offset


def test_empty_bucket_snapshot(store: SeqStore, task: str) -> None:
    snap = store.snapshot(task, 4)
    assert (snap.bucket, snap.seq, snap.rseq) == (4, 0, 1)
    assert snap.sources == {} and snap.live == {} and snap.partition_count is None
    assert store.read_datasets(task, 4, snap.rseq, snap.seq) == []


def test_snapshot_reports_heartbeats_and_partition_count(store: SeqStore, task: str) -> None:
    store.heartbeat(task, partition_count=3, partitions={0: True, 2: False}, now_ms=1_000)
    store.heartbeat(task, partition_count=3, partitions={1: True}, now_ms=1_500)
    snap = store.snapshot(task, 0)
    assert snap.partition_count == 3
    assert {p: (s.caught_up, s.heartbeat_wall_ms) for p, s in snap.live.items()} == {
        0: (True, 1_000),
        1: (True, 1_500),
        2: (False, 1_000),
    }


def test_read_datasets_in_chunks(redis_client: redis.Redis, task: str) -> None:
    store = SeqStore(redis_client, read_chunk=3)
    _write(store, task, 0, 10)
    got = store.read_datasets(task, 0, 2, 9)
    assert got == [(s, f"d{s - 1}".encode()) for s in range(2, 10)]


def test_release_deletes_below_and_never_moves_back(
    store: SeqStore, task: str, redis_client: redis.Redis
) -> None:
    _write(store, task, 0, 10)
    keys = TaskKeys(task)

    assert store.release(task, 0, 6) == 6
    stored = [redis_client.hexists(keys.datasets(0), s) for s in range(1, 11)]
    assert stored == [False] * 5 + [True] * 5
    assert store.snapshot(task, 0).rseq == 6
    with pytest.raises(MissingDataSetError) as missing:
        store.read_datasets(task, 0, 5, 10)
    assert missing.value.seq == 5

    assert store.release(task, 0, 3) == 6  # a stale owner cannot move it back
    assert store.snapshot(task, 0).rseq == 6
    assert len(store.read_datasets(task, 0, 6, 10)) == 5

    with pytest.raises(ProtocolViolationError):
        store.release(task, 0, 12)  # data set 11 was never written
    assert store.release(task, 0, 11) == 11  # everything reduced
    assert redis_client.exists(keys.datasets(0)) == 0
    assert store.snapshot(task, 0).seq == 10  # the counter stays: no seq is ever reused


def test_release_of_a_large_range(store: SeqStore, task: str, redis_client: redis.Redis) -> None:
    keys = TaskKeys(task)
    redis_client.set(keys.seq(1), 1_200)
    redis_client.hset(keys.datasets(1), mapping={s: b"x" for s in range(1, 1_201)})
    assert store.release(task, 1, 1_201) == 1_201
    assert redis_client.exists(keys.datasets(1)) == 0


def test_backlog_counts_unreleased_datasets_over_buckets(store: SeqStore, task: str) -> None:
    assert store.backlog(task, buckets=4) == Backlog(unmerged=0, unreleased=0)
    last = _write(store, task, 0, 6)
    _write(store, task, 3, 4, start_offset=last)
    assert store.backlog(task, buckets=4) == Backlog(unmerged=10, unreleased=10)
    store.release(task, 0, 5)
    assert store.backlog(task, buckets=4) == Backlog(unmerged=6, unreleased=6)
    store.release(task, 3, 5)
    assert store.backlog(task, buckets=4) == Backlog(unmerged=2, unreleased=2)


def test_unmerged_backlog_counts_what_no_reducer_has_merged(store: SeqStore, task: str) -> None:
    _write(store, task, 0, 6)
    store.snapshot(task, 0, merged=4)  # the owner notes how far it merged
    assert store.backlog(task, buckets=1) == Backlog(unmerged=2, unreleased=6)
    store.snapshot(task, 0, merged=2)  # a new owner replaying: the mark never moves back
    store.snapshot(task, 0, merged=99)  # beyond seq: ignored
    assert store.backlog(task, buckets=1) == Backlog(unmerged=2, unreleased=6)
    store.release(task, 0, 7)
    assert store.backlog(task, buckets=1) == Backlog(unmerged=0, unreleased=0)


def test_checkpoints_are_dropped_below_a_number(store: SeqStore, task: str) -> None:
    for field in ("1:a", "2:b", "2:c", "3:d"):
        store.write_checkpoint(task, 0, field, field.encode())
    store.write_checkpoint(task, 1, "1:other-unit", b"x")
    assert store.drop_checkpoints_before(task, 0, 3) == 3
    assert store.read_checkpoints(task, 0, ["3:d", "2:b"]) == [b"3:d", None]
    assert store.read_checkpoints(task, 1, ["1:other-unit"]) == [b"x"]


def test_memory_used_grows_with_datasets(store: SeqStore, task: str) -> None:
    before = store.memory_used()
    store.apply_batch(
        task, expected={}, sources={}, datasets={0: b"x" * 2_000_000}, counters={}, now_ms=0
    )
    assert store.memory_used() >= before + 1_000_000


def test_store_works_over_a_decoding_client(redis_client: redis.Redis, task: str) -> None:
    pool = redis_client.connection_pool
    kwargs = {**pool.connection_kwargs, "decode_responses": True}
    decoding = redis.Redis(connection_pool=redis.ConnectionPool(pool.connection_class, **kwargs))
    store = SeqStore(decoding)
    binary = bytes(range(256))
    store.apply_batch(
        task,
        expected={0: -1},
        sources={0: SourceState(applied_offset=0)},
        datasets={0: binary},
        counters={"records_in": 1},
        now_ms=0,
    )
    assert store.read_datasets(task, 0, 1, 1) == [(1, binary)]
    assert store.counters.read(task) == {"records_in": 1, "batches": 1, "datasets": 1}


BATCHES_PER_SNAPSHOT = 10  # a writer's batches between two snapshots of the reader, at most


def test_snapshot_is_consistent_with_concurrent_writers(store: SeqStore, task: str) -> None:
    """Every record at or below the snapshot's watermark is in a data set <= its seq.

    Two writers advance partitions 0 and 1 with rising event times, splitting records over
    buckets 0 and 1; a reader snapshots meanwhile. A snapshot read in several steps (seq first,
    sources later) would see a watermark covering records whose data sets it does not count.
    """
    partitions, batches, per_batch = 2, 150, 4
    store.heartbeat(task, partition_count=partitions, partitions={0: False, 1: False}, now_ms=0)
    stop = threading.Event()
    observed: list[tuple[int, int, set[tuple[int, int]]]] = []  # (bucket, watermark, records)
    reader = threading.Thread(
        target=_observe_snapshots, args=(store, task, partitions, stop, observed)
    )
    writers = [
        threading.Thread(
            target=_write_rising_times, args=(store, task, p, batches, per_batch, observed)
        )
        for p in range(partitions)
    ]
    reader.start()
    for thread in writers:
        thread.start()
    for thread in writers:
        thread.join()
    stop.set()
    reader.join()

    assert len(observed) > 10
    all_times = range(batches * per_batch)
    for bucket, watermark, records in observed:
        due = {(p, t) for p in range(partitions) for t in all_times if t <= watermark}
        due = {(p, t) for p, t in due if t % 2 == bucket}
        assert due <= records, f"bucket {bucket} watermark {watermark}: {sorted(due - records)}"


def _write_rising_times(
    store: SeqStore,
    task: str,
    partition: int,
    batches: int,
    per_batch: int,
    observed: list[tuple[int, int, set[tuple[int, int]]]],
) -> None:
    """`batches` batches of `per_batch` rising event times, split over buckets 0 and 1. Before
    each batch it waits (10 s at most) until the reader took a snapshot per
    `BATCHES_PER_SNAPSHOT` batches written: on a busy machine the writers could otherwise
    finish before the reader took a dozen."""
    offset = -1
    for n in range(batches):
        deadline = time.monotonic() + 10
        while len(observed) < n // BATCHES_PER_SNAPSHOT and time.monotonic() < deadline:
            time.sleep(0.001)
        times = [n * per_batch + i for i in range(per_batch)]
        by_bucket: dict[int, list[tuple[int, int]]] = {}
        for t in times:
            by_bucket.setdefault(t % 2, []).append((partition, t))
        assert store.apply_batch(
            task,
            expected={partition: offset},
            sources={
                partition: SourceState(applied_offset=offset + per_batch, stream_time_ms=times[-1])
            },
            datasets={b: json.dumps(r).encode() for b, r in by_bucket.items()},
            counters={},
            now_ms=n,
        ).applied
        offset += per_batch


def _observe_snapshots(
    store: SeqStore,
    task: str,
    partitions: int,
    stop: threading.Event,
    observed: list[tuple[int, int, set[tuple[int, int]]]],
) -> None:
    """Until `stop`: per bucket, a snapshot's watermark and the records of its data sets."""
    while not stop.is_set():
        for bucket in (0, 1):
            snap = store.snapshot(task, bucket)
            if len(snap.sources) < partitions:
                continue
            watermark = min(s.stream_time_ms or -1 for s in snap.sources.values())
            records = {
                (p, t)
                for _, data in store.read_datasets(task, bucket, snap.rseq, snap.seq)
                for p, t in json.loads(data)
            }
            observed.append((bucket, watermark, records))

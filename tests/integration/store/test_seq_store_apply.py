"""Writer side of the SEQ protocol against a real Redis: apply_batch and its guarantees."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
import redis

from mars.store import ApplyStatus, SeqStore, SourceState, TaskKeys

TaskDump = Callable[[str], dict[bytes, bytes]]


def _state(offset: int, stream_time: int | None = None) -> SourceState:
    return SourceState(applied_offset=offset, stream_time_ms=stream_time)


def test_first_batch_numbers_datasets_and_advances_sources(store: SeqStore, task: str) -> None:
    result = store.apply_batch(
        task,
        expected={0: -1, 1: -1},
        sources={0: _state(9, 1_000), 1: _state(4, 700)},
        datasets={3: b"\x00\xffbucket3", 0: b"bucket0"},
        counters={"records_in": 15, "accepted": 14, "bad": 1, "late": 0},
        now_ms=5_000,
    )
    assert result.status is ApplyStatus.APPLIED
    assert result.seqs == {0: 1, 3: 1}
    assert store.read_datasets(task, 3, 1, 1) == [(1, b"\x00\xffbucket3")]
    assert store.read_sources(task) == {
        0: SourceState(applied_offset=9, stream_time_ms=1_000, last_data_wall_ms=5_000),
        1: SourceState(applied_offset=4, stream_time_ms=700, last_data_wall_ms=5_000),
    }
    assert store.counters.read(task) == {
        "records_in": 15,
        "accepted": 14,
        "bad": 1,
        "batches": 1,
        "datasets": 2,
    }


def test_replayed_batch_is_rejected_and_changes_nothing(
    store: SeqStore, task: str, dump_task: TaskDump
) -> None:
    batch = dict(
        expected={0: -1},
        sources={0: _state(99, 2_000)},
        datasets={0: b"partials"},
        counters={"records_in": 100, "accepted": 100},
        now_ms=1,
    )
    assert store.apply_batch(task, **batch).applied  # type: ignore[arg-type]
    before = dump_task(task)

    replay = store.apply_batch(task, **batch)  # type: ignore[arg-type]

    assert replay.status is ApplyStatus.REJECTED
    assert replay.seqs == {}
    assert replay.sources == {
        0: SourceState(applied_offset=99, stream_time_ms=2_000, last_data_wall_ms=1)
    }
    assert dump_task(task) == before


def test_zombie_with_stale_offsets_is_rejected_for_all_its_partitions(
    store: SeqStore, task: str, dump_task: TaskDump
) -> None:
    # Mapper A owned partitions 0 and 1 and applied up to offsets 10 / 20.
    assert store.apply_batch(
        task,
        expected={0: -1, 1: -1},
        sources={0: _state(10, 100), 1: _state(20, 200)},
        datasets={0: b"a1"},
        counters={},
        now_ms=1,
    ).applied
    # After a rebalance mapper B owns partition 1 and moves it on to 30.
    assert store.apply_batch(
        task,
        expected={1: 20},
        sources={1: _state(30, 300)},
        datasets={0: b"b1"},
        counters={},
        now_ms=2,
    ).applied
    before = dump_task(task)

    # A has not noticed yet: its view of partition 1 is stale, partition 0 is current.
    zombie = store.apply_batch(
        task,
        expected={0: 10, 1: 20},
        sources={0: _state(15, 150), 1: _state(25, 250)},
        datasets={0: b"zombie", 1: b"zombie"},
        counters={"records_in": 10},
        now_ms=3,
    )

    assert zombie.status is ApplyStatus.REJECTED
    assert {s: st.applied_offset for s, st in zombie.sources.items()} == {0: 10, 1: 30}
    assert dump_task(task) == before  # partition 0 did not move either: all or nothing


def test_retry_after_a_lost_reply_is_recognised_as_done(store: SeqStore, task: str) -> None:
    sources = {0: _state(19, 500), 1: _state(9, 400)}
    first = store.apply_batch(
        task, expected={0: -1, 1: -1}, sources=sources, datasets={0: b"x"}, counters={}, now_ms=1
    )
    assert first.covers(sources)
    retry = store.apply_batch(
        task, expected={0: -1, 1: -1}, sources=sources, datasets={0: b"x"}, counters={}, now_ms=2
    )
    assert not retry.applied and retry.covers(sources)
    assert store.snapshot(task, 0).seq == 1
    further = {0: _state(29, 600), 1: _state(9, 400)}
    assert not retry.covers(further)  # a batch going beyond what is stored is not done


def test_unknown_source_is_expected_at_minus_one(store: SeqStore, task: str) -> None:
    result = store.apply_batch(
        task, expected={5: 7}, sources={5: _state(9)}, datasets={}, counters={}, now_ms=1
    )
    assert result.status is ApplyStatus.REJECTED
    assert result.sources == {5: SourceState()}
    assert store.read_sources(task) == {}


def test_batch_without_datasets_still_advances_offsets_and_counters(
    store: SeqStore, task: str, redis_client: redis.Redis
) -> None:
    result = store.apply_batch(
        task,
        expected={2: -1},
        sources={2: _state(49, 10_000)},
        datasets={},
        counters={"records_in": 50, "late": 30, "bad": 20, "accepted": 0},
        now_ms=7,
    )
    assert result.applied and result.seqs == {}
    assert store.read_sources(task)[2].applied_offset == 49
    assert store.counters.read(task) == {"records_in": 50, "late": 30, "bad": 20, "batches": 1}
    assert redis_client.get(TaskKeys(task).seq(0)) is None


def test_stream_time_never_moves_back_and_last_data_follows_the_offset(
    store: SeqStore, task: str
) -> None:
    store.apply_batch(
        task, expected={0: -1}, sources={0: _state(5, 1_000)}, datasets={}, counters={}, now_ms=10
    )
    # All late: the caller passes an older stream time; the stored one stays.
    store.apply_batch(
        task, expected={0: 5}, sources={0: _state(8, 400)}, datasets={}, counters={}, now_ms=20
    )
    assert store.read_sources(task)[0] == SourceState(
        applied_offset=8, stream_time_ms=1_000, last_data_wall_ms=20
    )
    # No new records for the partition: offset unchanged, so last data time is kept.
    store.apply_batch(
        task, expected={0: 8}, sources={0: _state(8, None)}, datasets={}, counters={}, now_ms=30
    )
    assert store.read_sources(task)[0] == SourceState(
        applied_offset=8, stream_time_ms=1_000, last_data_wall_ms=20
    )


def test_invalid_batches_are_refused_before_reaching_redis(store: SeqStore, task: str) -> None:
    with pytest.raises(ValueError, match="no expected offset"):
        store.apply_batch(
            task, expected={}, sources={0: _state(1)}, datasets={}, counters={}, now_ms=1
        )
    with pytest.raises(ValueError, match="move back"):
        store.apply_batch(
            task, expected={0: 5}, sources={0: _state(4)}, datasets={}, counters={}, now_ms=1
        )
    with pytest.raises(ValueError, match="maintained by apply_batch"):
        store.apply_batch(
            task, expected={}, sources={}, datasets={}, counters={"batches": 1}, now_ms=1
        )


def test_backfill_source_ids_keep_their_own_offsets(store: SeqStore, task: str) -> None:
    store.apply_batch(
        task,
        expected={0: -1},
        sources={0: _state(1_000, 9_000)},
        datasets={},
        counters={},
        now_ms=1,
    )
    backfill = "backfill:job7:0"
    # A bulk job re-reads offsets 0..499 of partition 0, below the live mapper's offset.
    result = store.apply_batch(
        task,
        expected={backfill: -1},
        sources={backfill: _state(499, 5_000)},
        datasets={1: b"history"},
        counters={},
        now_ms=2,
    )
    assert result.applied
    assert not store.apply_batch(
        task,
        expected={backfill: -1},
        sources={backfill: _state(499)},
        datasets={},
        counters={},
        now_ms=3,
    ).applied
    assert set(store.read_sources(task)) == {0}
    states = store.read_source_states(task, [0, backfill, "backfill:other:0"])
    assert states[backfill].applied_offset == 499
    assert states["backfill:other:0"] == SourceState()
    assert set(store.snapshot(task, 1).sources) == {0}


def test_counters_accumulate_over_batches_and_incr_stats(store: SeqStore, task: str) -> None:
    offset = -1
    for n in range(1, 6):
        store.apply_batch(
            task,
            expected={0: offset},
            sources={0: _state(offset + 10)},
            datasets={n % 2: b"x"},
            counters={"records_in": 10, "accepted": 9, "filtered": 1},
            now_ms=n,
        )
        offset += 10
    store.counters.add(task, {"late": 3, "bad": 0})
    assert store.counters.read(task) == {
        "records_in": 50,
        "accepted": 45,
        "filtered": 5,
        "batches": 5,
        "datasets": 5,
        "late": 3,
    }


def test_eight_concurrent_writers_get_contiguous_seqs(store: SeqStore, task: str) -> None:
    writers, batches_each = 8, 40
    assigned: list[tuple[int, bytes]] = []
    lock = threading.Lock()
    barrier = threading.Barrier(writers)

    def write(partition: int) -> None:
        barrier.wait()
        offset = -1
        for n in range(batches_each):
            payload = f"p{partition}-b{n}".encode()
            result = store.apply_batch(
                task,
                expected={partition: offset},
                sources={partition: _state(offset + 10, n)},
                datasets={0: payload},
                counters={"records_in": 10},
                now_ms=n,
            )
            assert result.applied
            offset += 10
            with lock:
                assigned.append((result.seqs[0], payload))

    threads = [threading.Thread(target=write, args=(p,)) for p in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    total = writers * batches_each
    assert sorted(seq for seq, _ in assigned) == list(range(1, total + 1))
    assert store.read_datasets(task, 0, 1, total) == sorted(assigned)
    assert store.snapshot(task, 0).seq == total
    assert store.counters.read(task)["records_in"] == 10 * total
    assert {p: s.applied_offset for p, s in store.read_sources(task).items()} == {
        p: 10 * batches_each - 1 for p in range(writers)
    }


def test_racing_writers_on_one_partition_apply_each_offset_range_once(
    store: SeqStore, task: str
) -> None:
    """Eight zombies/owners race for one partition: each range of offsets lands exactly once."""
    writers, last_offset, step = 8, 399, 7
    rejected = [0] * writers
    barrier = threading.Barrier(writers)

    def write(index: int) -> None:
        view = store.read_sources(task).get(0)
        offset = -1 if view is None else view.applied_offset
        barrier.wait()  # all start from the same view: 7 of the first 8 attempts must lose
        while offset < last_offset:
            upto = min(offset + step, last_offset)
            result = store.apply_batch(
                task,
                expected={0: offset},
                sources={0: _state(upto)},
                datasets={0: f"{offset + 1}-{upto}".encode()},
                counters={"records_in": upto - offset},
                now_ms=1,
            )
            if result.applied:
                offset = upto
            else:
                rejected[index] += 1
                offset = result.sources[0].applied_offset  # re-read, trim, retry

    threads = [threading.Thread(target=write, args=(i,)) for i in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    seq = store.snapshot(task, 0).seq
    ranges = [
        tuple(map(int, d.decode().split("-"))) for _, d in store.read_datasets(task, 0, 1, seq)
    ]
    covered = [o for first, last in ranges for o in range(first, last + 1)]
    assert covered == list(range(last_offset + 1))  # no gap, no overlap, in seq order
    assert store.counters.read(task)["records_in"] == last_offset + 1
    assert sum(rejected) >= writers - 1  # the race really happened

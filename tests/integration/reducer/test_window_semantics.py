"""Window semantics of one owner: real pre-aggregation, real Redis, fake clock, memory output."""

from __future__ import annotations

from typing import Any

import pytest
import redis

from mars.sql import parse_task
from mars.store import SeqStore
from mars.store.backfill import BackfillCoordination
from mars.tasks.spec import TaskSpec
from tests.integration.reducer.harness import FakeClock, MemoryOutput, ScriptedMapper, make_owner

IDLE_MS = 1000


def count_spec(task_id: str, *, buckets: int = 1, extra: str = "") -> TaskSpec:
    return parse_task(
        "SELECT k, COUNT(*) AS c FROM S GROUP BY k WINDOWING 2 ms GRACE 1 ms "
        f"{extra} WITH (event_time='t', event_time_format='epoch_ms', buckets={buckets}, "
        "idle_timeout='1 s')",
        task_id=task_id,
    )


def counts(output: MemoryOutput, spec: TaskSpec) -> list[tuple[int, Any, int]]:
    return [(r["window_start"], r["k"], r["c"]) for r in output.records(spec.output_topic)]


def test_paper_example_with_idle_close_and_a_late_record(store: SeqStore, task_id: str) -> None:
    spec = count_spec(task_id)
    clock, output = FakeClock(), MemoryOutput()
    mapper = ScriptedMapper(spec, store, clock)
    owner = make_owner(spec, store, clock, output)
    for t in (0, 1, 2, 1, 0, 5, 0):
        mapper.send(0, [{"k": "a", "t": t}])
    mapper.heartbeat(caught_up=False)
    owner.step()
    assert counts(output, spec) == [(0, "a", 4), (2, "a", 1)]
    assert mapper.late == 1  # the last 0: its window ended + grace before stream time 5

    clock.advance(IDLE_MS - 1)
    mapper.heartbeat(caught_up=True)
    assert not owner.step().closed  # not idle yet: [4,6) waits
    clock.advance(1)
    mapper.heartbeat(caught_up=True)
    owner.step()
    assert counts(output, spec) == [(0, "a", 4), (2, "a", 1), (4, "a", 1)]
    progress = output.progress()
    assert progress is not None and progress.counter("windows_emitted") == 3


def test_contribution_to_a_window_closed_by_idleness_is_late(store: SeqStore, task_id: str) -> None:
    spec = count_spec(task_id)
    clock, output = FakeClock(), MemoryOutput()
    mapper = ScriptedMapper(spec, store, clock)
    owner = make_owner(spec, store, clock, output)
    mapper.send(0, [{"k": "a", "t": 5}])
    clock.advance(IDLE_MS)
    mapper.heartbeat(caught_up=True)
    owner.step()
    assert counts(output, spec) == [(4, "a", 1)]
    # The partition comes back with a record the mapper accepts (stream time 5 < 6 + 1) ...
    mapper.send(0, [{"k": "a", "t": 4}, {"k": "b", "t": 5}])
    mapper.heartbeat(caught_up=False)
    owner.step()
    # ... but the reducer already emitted [4,6): counted and sent to the late topic, not emitted.
    assert counts(output, spec) == [(4, "a", 1)]
    late = output.records(spec.late_topic)
    assert sorted((r["group"]["k"], r["records"]) for r in late) == [("a", 1), ("b", 1)]
    progress = output.progress()
    assert progress is not None and progress.counter("late_records") == 2


def test_out_of_order_within_grace_counts_beyond_grace_is_late(
    store: SeqStore, task_id: str
) -> None:
    spec = count_spec(task_id)
    clock, output = FakeClock(), MemoryOutput()
    mapper = ScriptedMapper(spec, store, clock)
    owner = make_owner(spec, store, clock, output)
    mapper.heartbeat(caught_up=False)
    mapper.send(0, [{"k": "a", "t": 0}, {"k": "a", "t": 2}])
    owner.step()
    assert counts(output, spec) == []  # watermark 2 < end 2 + grace 1
    mapper.send(0, [{"k": "a", "t": 1}])  # out of order, within grace
    mapper.send(0, [{"k": "a", "t": 3}])
    owner.step()
    assert counts(output, spec) == [(0, "a", 2)]
    mapper.send(0, [{"k": "a", "t": 6}, {"k": "a", "t": 3}])  # 3: [2,4) closed at 5 <= 6
    owner.step()
    assert counts(output, spec) == [(0, "a", 2), (2, "a", 2)]
    assert mapper.late == 1


def test_window_waits_for_the_slower_partition_unless_it_is_idle(
    store: SeqStore, task_id: str
) -> None:
    spec = count_spec(task_id)
    clock, output = FakeClock(), MemoryOutput()
    mapper = ScriptedMapper(spec, store, clock, partitions=2)
    owner = make_owner(spec, store, clock, output)
    mapper.heartbeat(caught_up=False)
    mapper.send(1, [{"k": "a", "t": 0}])
    mapper.send(0, [{"k": "a", "t": 1}, {"k": "a", "t": 10}])
    owner.step()
    assert counts(output, spec) == []  # partition 1 holds the watermark at 0
    clock.advance(IDLE_MS)
    mapper.send(0, [{"k": "a", "t": 11}])  # partition 0 stays active
    mapper.heartbeat(caught_up=False, partitions=[0])
    mapper.heartbeat(caught_up=True, partitions=[1])  # partition 1: caught up, no data for 1 s
    owner.step()
    assert counts(output, spec) == [(0, "a", 2)]  # [10,12) still open: watermark is 11


def test_aggregates_at_close_with_nulls_and_a_null_group_key(store: SeqStore, task_id: str) -> None:
    spec = parse_task(
        "SELECT k, COUNT(*) AS n, COUNT(v) AS nv, SUM(v) AS s, MIN(v) AS lo, MAX(v) AS hi, "
        "AVG(v) AS a, COUNT(DISTINCT v) AS d FROM S GROUP BY k WINDOWING 10 ms "
        "WITH (event_time='t', event_time_format='epoch_ms', buckets=2, idle_timeout='1 s')",
        task_id=task_id,
    )
    clock, output = FakeClock(), MemoryOutput()
    mapper = ScriptedMapper(spec, store, clock)
    owner = make_owner(spec, store, clock, output)
    mapper.heartbeat(caught_up=False)
    mapper.send(0, [{"k": "x", "t": 1, "v": 4}, {"k": "x", "t": 2, "v": None}])
    mapper.send(0, [{"k": "x", "t": 3, "v": 2}, {"k": "x", "t": 4, "v": 4}])
    mapper.send(0, [{"k": None, "t": 5, "v": 7}, {"t": 6}, {"k": "y", "t": 7, "v": None}])
    mapper.send(0, [{"k": "z", "t": 20}])
    owner.step()
    rows = {r["k"]: r for r in output.records(spec.output_topic)}
    assert set(rows) == {"x", None, "y"}
    x = rows["x"]
    assert (x["n"], x["nv"], x["s"], x["lo"], x["hi"], x["d"]) == (4, 3, 10, 2, 4, 2)
    assert x["a"] == pytest.approx(10 / 3)
    null_group = rows[None]  # k=None and a record without k: one group
    assert (null_group["n"], null_group["nv"], null_group["s"], null_group["d"]) == (2, 1, 7, 1)
    y = rows["y"]
    assert (y["n"], y["nv"], y["s"], y["lo"], y["hi"], y["a"], y["d"]) == (
        1,
        0,
        None,
        None,
        None,
        None,
        0,
    )
    assert x["task"] == task_id and x["window_start"] == 0 and x["window_end"] == 10
    assert x["window_start_iso"] == "1970-01-01T00:00:00.000Z"


def test_top_k_across_all_buckets_of_a_window(store: SeqStore, task_id: str) -> None:
    spec = count_spec(task_id, buckets=4, extra="ORDER BY c DESC LIMIT 3")
    clock, output = FakeClock(), MemoryOutput()
    mapper = ScriptedMapper(spec, store, clock)
    owner = make_owner(spec, store, clock, output)  # covers all 4 buckets
    mapper.heartbeat(caught_up=False)
    sizes = {"a": 5, "b": 4, "c": 3, "d": 2, "e": 1, "f": 1}
    for key, n in sizes.items():
        mapper.send(0, [{"k": key, "t": 0}] * n + [{"k": key, "t": 2}] * (6 - n))
    mapper.send(0, [{"k": "a", "t": 100}])
    owner.step()
    rows = counts(output, spec)
    assert [r for r in rows if r[0] == 0] == [(0, "a", 5), (0, "b", 4), (0, "c", 3)]
    assert [r for r in rows if r[0] == 2] == [(2, "e", 5), (2, "f", 5), (2, "d", 4)]


def test_a_backfill_hold_keeps_windows_open_until_released(
    store: SeqStore, task_id: str, redis_client: redis.Redis
) -> None:
    spec = count_spec(task_id)
    clock, output = FakeClock(), MemoryOutput()
    mapper = ScriptedMapper(spec, store, clock)
    owner = make_owner(spec, store, clock, output)
    holds = BackfillCoordination(redis_client)
    holds.hold(task_id, "history", now_ms=clock())
    mapper.send(0, [{"k": "a", "t": 0}, {"k": "a", "t": 9}])
    mapper.heartbeat(caught_up=False)
    owner.step()
    assert counts(output, spec) == []  # the watermark (9) passed [0,2) but a backfill holds it
    holds.release(task_id, "history")
    owner.step()
    assert counts(output, spec) == [(0, "a", 1)]


def test_a_dead_mappers_stale_heartbeat_does_not_make_its_partition_idle(
    store: SeqStore, task_id: str
) -> None:
    spec = count_spec(task_id)
    clock, output = FakeClock(), MemoryOutput()
    mapper = ScriptedMapper(spec, store, clock)
    owner = make_owner(spec, store, clock, output, idle_heartbeat_timeout_ms=500)
    mapper.send(0, [{"k": "a", "t": 5}])
    mapper.heartbeat(caught_up=True)  # ... and then the mapper dies: no more heartbeats
    clock.advance(IDLE_MS)
    owner.step()
    assert counts(output, spec) == []  # no data for idle_timeout, but nobody vouches for it
    mapper.heartbeat(caught_up=True)  # a live mapper owns the partition again, caught up
    owner.step()
    assert counts(output, spec) == [(4, "a", 1)]

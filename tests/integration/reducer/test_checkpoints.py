"""Checkpointed open windows (real Redis, fake clock, in-memory output): an owner releases every
data set it merged once its open windows are checkpointed, whatever the window length, and a
new owner resumes from the committed checkpoint, exactly once."""

from __future__ import annotations

import random
from collections import Counter

import pytest
import redis

from mars.engine.columnar_checkpoint import checkpoint_dataset
from mars.sql import parse_task
from mars.store import SeqStore, TaskKeys
from mars.tasks.spec import TaskSpec
from reducer.output import OutputError
from reducer.unit_owner import RedisDataLostError
from tests.integration.reducer.harness import FakeClock, MemoryOutput, ScriptedMapper, make_owner
from tests.integration.reducer.test_owner_recovery import FailingOutput

HOUR_MS = 3_600_000
INTERVAL_MS = 1_000


def hour_spec(task_id: str, *, buckets: int = 2) -> TaskSpec:
    return parse_task(
        "SELECT k, COUNT(*) AS c, SUM(v) AS s FROM S GROUP BY k WINDOWING 1 h GRACE 1 s "
        f"WITH (event_time='t', event_time_format='epoch_ms', buckets={buckets}, "
        "idle_timeout='1 s')",
        task_id=task_id,
    )


Expected = Counter[tuple[int, str, str]]  # (window start, key, "c" | "s")


def send_minute(mapper: ScriptedMapper, rng: random.Random, minute: int) -> Expected:
    """One minute of event time in three batches; the counts and sums it adds."""
    expected: Expected = Counter()
    for batch in range(3):
        rows = []
        for i in range(20):
            t = minute * 60_000 + batch * 20_000 + i * 1_000
            key, value = rng.choice("abcdefgh"), rng.randint(1, 9)
            rows.append({"k": key, "t": t, "v": value})
            expected[(t // HOUR_MS * HOUR_MS, key, "c")] += 1
            expected[(t // HOUR_MS * HOUR_MS, key, "s")] += value
        mapper.send(0, rows)
    return expected


def emitted(output: MemoryOutput, spec: TaskSpec) -> Expected:
    result: Expected = Counter()
    seen: set[tuple[int, str]] = set()
    for row in output.records(spec.output_topic):
        window_key = (row["window_start"], row["k"])
        assert window_key not in seen, f"{window_key} emitted twice"
        seen.add(window_key)
        result[(*window_key, "c")] = row["c"]
        result[(*window_key, "s")] = row["s"]
    return result


def stored_datasets(client: redis.Redis, task_id: str) -> int:
    keys = TaskKeys(task_id)
    return sum(client.hlen(key) for key in client.scan_iter(match=keys.prefix + "b:*:d"))


def checkpoint_fields(client: redis.Redis, task_id: str, unit: int) -> list[bytes]:
    return sorted(client.hkeys(TaskKeys(task_id).checkpoints(unit)))


def test_checkpoints_release_the_data_sets_of_open_windows(
    store: SeqStore, task_id: str, redis_client: redis.Redis
) -> None:
    spec = hour_spec(task_id)
    clock, output = FakeClock(), MemoryOutput()
    mapper = ScriptedMapper(spec, store, clock)
    mapper.heartbeat(caught_up=False)
    owner = make_owner(spec, store, clock, output, checkpoint_interval_ms=INTERVAL_MS)
    rng = random.Random(1)
    expected: Expected = Counter()
    peak = 0
    for minute in range(130):  # two hours and a bit: two windows close, a third stays open
        expected += send_minute(mapper, rng, minute)
        peak = max(peak, stored_datasets(redis_client, task_id))
        owner.step()
        clock.advance(INTERVAL_MS)
    # Every step one interval after the last checkpoint checkpoints: Redis holds at most two
    # minutes of data sets (3 batches x 2 buckets each), not two hours of them.
    assert peak <= 2 * 3 * spec.options.buckets
    assert stored_datasets(redis_client, task_id) <= 3 * spec.options.buckets
    progress = output.progress()
    assert progress is not None and progress.checkpoint is not None
    # Redis holds the committed chain (a full checkpoint and its deltas), nothing else
    chain = [ref.field.encode() for ref in progress.checkpoint_chain]
    assert checkpoint_fields(redis_client, task_id, 0) == sorted(chain)
    assert all(progress.rseqs[b] == progress.merged[b] + 1 for b in progress.merged)

    clock.advance(HOUR_MS)  # input stopped: idle close moves the watermark past the last window
    mapper.heartbeat(caught_up=True)
    owner.step()
    assert emitted(output, spec) == expected
    assert stored_datasets(redis_client, task_id) == 0
    # The next checkpoint, a full one (the chain's windows all closed), no longer holds the
    # closed windows: Redis is back to (almost) nothing.
    clock.advance(INTERVAL_MS)
    owner.step()
    (checkpoint,) = redis_client.hvals(TaskKeys(task_id).checkpoints(0))
    assert checkpoint_dataset(checkpoint).windows == {}


@pytest.mark.parametrize("crash", ["before the commit", "after the checkpoint write"])
def test_owner_killed_mid_window_resumes_from_the_checkpoint(
    store: SeqStore, task_id: str, redis_client: redis.Redis, crash: str
) -> None:
    spec = hour_spec(task_id)
    clock = FakeClock()
    # The 6th commit fails: five checkpoints of the first window are committed by then.
    output = FailingOutput(fail_at=6) if crash == "before the commit" else MemoryOutput()
    mapper = ScriptedMapper(spec, store, clock)
    mapper.heartbeat(caught_up=False)
    owner = make_owner(spec, store, clock, output, checkpoint_interval_ms=INTERVAL_MS)
    rng = random.Random(2)
    expected: Expected = Counter()
    replayed: int | None = None  # data sets merged by the new owner's first step
    for minute in range(8):
        expected += send_minute(mapper, rng, minute)
        try:
            if crash == "after the checkpoint write" and minute == 6:
                # The owner writes its checkpoint to Redis and dies before the Kafka commit.
                output.commit = _crash  # type: ignore[method-assign]
            outcome = owner.step()
            if replayed is None and output.starts == 2:
                replayed = outcome.merged
        except (OutputError, RuntimeError):
            output.commit = type(output).commit.__get__(output)  # type: ignore[method-assign]
            committed = output.progress()
            assert committed is not None and committed.checkpoint is not None
            assert committed.checkpoint.number >= 4
            owner = make_owner(spec, store, clock, output, checkpoint_interval_ms=INTERVAL_MS)
            owner.recover()
        clock.advance(INTERVAL_MS)
    # The new owner started from the checkpoint: it replayed the two minutes since then (3
    # batches x 2 buckets each), not the whole window so far.
    assert replayed is not None and 0 < replayed <= 2 * 3 * spec.options.buckets
    for minute in range(8, 70):
        expected += send_minute(mapper, rng, minute)
        owner.step()
        clock.advance(INTERVAL_MS)
    clock.advance(HOUR_MS)  # input stopped: idle close moves the watermark past the last window
    mapper.heartbeat(caught_up=True)
    owner.step()
    assert emitted(output, spec) == expected
    # The crashed owner's uncommitted checkpoint is gone with the next committed one.
    assert len(checkpoint_fields(redis_client, task_id, 0)) == 1


def test_a_lost_checkpoint_stops_the_unit_instead_of_guessing(
    store: SeqStore, task_id: str, redis_client: redis.Redis
) -> None:
    spec = hour_spec(task_id, buckets=1)
    clock, output = FakeClock(), MemoryOutput()
    mapper = ScriptedMapper(spec, store, clock)
    mapper.heartbeat(caught_up=False)
    owner = make_owner(spec, store, clock, output, checkpoint_interval_ms=0)
    send_minute(mapper, random.Random(3), 0)
    owner.step()
    redis_client.delete(TaskKeys(task_id).checkpoints(0))
    with pytest.raises(RedisDataLostError, match="checkpoint"):
        make_owner(spec, store, clock, output).recover()


def _crash(_records: object) -> None:
    raise RuntimeError("injected: killed after writing the checkpoint, before the commit")


@pytest.mark.parametrize(
    ("windowing", "size_ms", "slide_ms"),
    [
        ("1 d GRACE 10 m", 86_400_000, 86_400_000),
        ("1 h SLIDE 5 m GRACE 1 m", HOUR_MS, 300_000),
    ],
)
def test_day_and_hopping_windows_keep_only_an_interval_of_data_sets(
    store: SeqStore,
    task_id: str,
    redis_client: redis.Redis,
    windowing: str,
    size_ms: int,
    slide_ms: int,
) -> None:
    """Two hours of input into a 1-day window with grace, and into hourly windows sliding by
    5 minutes (12 open at once): Redis holds two intervals of data sets at most, whatever
    the window; every window is exact once input stops."""
    spec = parse_task(
        f"SELECT k, COUNT(*) AS c, SUM(v) AS s FROM S GROUP BY k WINDOWING {windowing} "
        "WITH (event_time='t', event_time_format='epoch_ms', buckets=2, idle_timeout='1 s')",
        task_id=task_id,
    )
    clock, output = FakeClock(), MemoryOutput()
    mapper = ScriptedMapper(spec, store, clock)
    mapper.heartbeat(caught_up=False)
    owner = make_owner(spec, store, clock, output, checkpoint_interval_ms=INTERVAL_MS)
    rng = random.Random(3)
    expected: Expected = Counter()
    peak = 0
    for minute in range(120):
        rows = [
            {"k": rng.choice("abcdefgh"), "t": minute * 60_000 + i * 3_000, "v": rng.randint(1, 9)}
            for i in range(20)
        ]
        mapper.send(0, rows)
        for row in rows:
            first = (row["t"] - size_ms) // slide_ms * slide_ms + slide_ms
            for start in range(first, row["t"] + 1, slide_ms):
                expected[(start, row["k"], "c")] += 1
                expected[(start, row["k"], "s")] += row["v"]
        peak = max(peak, stored_datasets(redis_client, task_id))
        owner.step()
        clock.advance(INTERVAL_MS)
    assert peak <= 2 * spec.options.buckets, f"{peak} data sets held at once"
    clock.advance(2 * 86_400_000)  # input stopped: idle close passes every window and its grace
    mapper.heartbeat(caught_up=True)
    owner.step()
    assert emitted(output, spec) == expected
    assert stored_datasets(redis_client, task_id) == 0

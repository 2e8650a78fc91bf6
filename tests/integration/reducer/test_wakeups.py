"""Idle owners wake when a mapper writes their task (`apply_batch` publishes, one subscriber per
reducer process sets the owners' events), instead of polling Redis every 100 ms."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import pytest
import redis

from mars.store import SeqStore
from reducer.wakeups import WriteWakeups
from tests.integration.reducer.harness import FakeClock, MemoryOutput, ScriptedMapper, make_owner
from tests.integration.reducer.test_window_semantics import count_spec, counts


def wait_for(condition: Callable[[], bool], *, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.01)
    return condition()


@pytest.fixture
def wakeups(redis_client: redis.Redis) -> Iterator[WriteWakeups]:
    subscriber = WriteWakeups(redis_client).start()
    assert wait_for(lambda: subscriber.subscribed, timeout_s=5)
    yield subscriber
    subscriber.stop()


def test_a_write_wakes_the_owners_of_its_task_only(
    store: SeqStore, task_id: str, wakeups: WriteWakeups
) -> None:
    spec = count_spec(task_id)
    written, other = threading.Event(), threading.Event()
    wakeups.watch(task_id, written)
    wakeups.watch(f"{task_id}-other", other)
    ScriptedMapper(spec, store, FakeClock()).send(0, [{"k": "a", "t": 0}])
    assert written.wait(5)
    assert not other.is_set()

    wakeups.unwatch(task_id, written)
    written.clear()
    ScriptedMapper(spec, store, FakeClock(), offsets={0: 0}).send(0, [{"k": "a", "t": 1}])
    time.sleep(0.3)
    assert not written.is_set()


def test_an_idle_owner_merges_a_write_at_once(
    store: SeqStore, task_id: str, wakeups: WriteWakeups
) -> None:
    """The owner's polls are a minute apart: only the wake-up can make it close the window."""
    spec = count_spec(task_id)
    clock, output = FakeClock(), MemoryOutput()
    mapper = ScriptedMapper(spec, store, clock)
    mapper.heartbeat(caught_up=False)
    owner = make_owner(
        spec,
        store,
        clock,
        output,
        wakeups=wakeups,
        poll_interval_ms=60_000,
        idle_poll_interval_ms=60_000,
    )
    stop = threading.Event()
    thread = threading.Thread(target=owner.run, args=(stop,), daemon=True)
    thread.start()
    try:
        time.sleep(0.5)  # its first steps found nothing: it sleeps
        assert counts(output, spec) == []
        # Stream time 10 ms passes the end + grace (3 ms) of window [0, 2).
        mapper.send(0, [{"k": "a", "t": 0}, {"k": "a", "t": 1}, {"k": "b", "t": 10}])
        assert wait_for(lambda: (0, "a", 2) in counts(output, spec), timeout_s=5)
    finally:
        stop.set()
        owner.wake()
        thread.join(timeout=5)
    assert not thread.is_alive()

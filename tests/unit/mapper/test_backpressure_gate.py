"""Backpressure decisions: pause before one more batch could pass the mark, resume at half;
memory pauses only a task that still has data sets for the reducers to release."""

from __future__ import annotations

from mapper.backpressure import BackpressureGate, PressureMarks
from mars.store.state import Backlog

MARKS = PressureMarks(backlog_high_datasets=100, redis_memory_high_bytes=1000)


def _unmerged(n: int) -> Backlog:
    return Backlog(unmerged=n, unreleased=n)


def test_pressured_as_soon_as_one_more_batch_could_pass_the_mark() -> None:
    gate = BackpressureGate(MARKS)
    gate.update(now_ms=0, backlogs={"t": _unmerged(80)}, memory_used=0)
    gate.evaluate("t", buckets=8)
    assert not gate.pressured("t")
    gate.note_written("t", 8, buckets=8)  # 88 + 8 > 100? no, 96 <= 100
    assert not gate.pressured("t")
    gate.note_written("t", 5, buckets=8)  # 93 + 8 > 100
    assert gate.pressured("t")


def test_resumes_only_below_half_of_the_mark() -> None:
    gate = BackpressureGate(MARKS)
    gate.update(now_ms=0, backlogs={"t": _unmerged(100)}, memory_used=0)
    gate.evaluate("t", buckets=4)
    assert gate.pressured("t")
    gate.update(now_ms=500, backlogs={"t": _unmerged(60)}, memory_used=0)
    gate.evaluate("t", buckets=4)
    assert gate.pressured("t"), "between half and the mark: stay paused (hysteresis)"
    gate.update(now_ms=1000, backlogs={"t": _unmerged(49)}, memory_used=0)
    gate.evaluate("t", buckets=4)
    assert not gate.pressured("t")


def test_merged_data_sets_waiting_for_a_checkpoint_are_not_backlog() -> None:
    gate = BackpressureGate(MARKS)
    gate.update(now_ms=0, backlogs={"t": Backlog(unmerged=3, unreleased=5_000)}, memory_used=0)
    gate.evaluate("t", buckets=4)
    assert not gate.pressured("t")
    assert gate.backlog("t") == 3


def test_redis_memory_pauses_tasks_with_data_sets_until_half() -> None:
    gate = BackpressureGate(MARKS)
    backlogs = {"a": Backlog(unmerged=0, unreleased=7), "b": Backlog(unmerged=2, unreleased=2)}
    gate.update(now_ms=0, backlogs=backlogs, memory_used=1000)
    assert gate.pressured("a") and gate.pressured("b")
    gate.update(now_ms=500, backlogs=backlogs, memory_used=600)
    assert gate.pressured("a")
    gate.update(now_ms=1000, backlogs=backlogs, memory_used=499)
    assert not gate.pressured("a") and not gate.pressured("b")


def test_memory_never_pauses_a_task_with_nothing_left_to_release() -> None:
    """Its memory is open-window state; pausing would freeze the windows that free it."""
    gate = BackpressureGate(MARKS)
    gate.update(now_ms=0, backlogs={"t": _unmerged(0)}, memory_used=5000)
    assert gate.memory_pressured and not gate.pressured("t")
    gate.note_written("t", 4, buckets=4)
    assert gate.pressured("t"), "it wrote again: wait until the reducers release it"
    gate.update(now_ms=500, backlogs={"t": _unmerged(0)}, memory_used=5000)
    assert not gate.pressured("t")


def test_checks_redis_at_most_every_interval() -> None:
    gate = BackpressureGate(MARKS)
    assert gate.due(0)
    gate.update(now_ms=0, backlogs={}, memory_used=0)
    assert not gate.due(499)
    assert gate.due(500)


def test_a_removed_task_is_no_longer_pressured() -> None:
    gate = BackpressureGate(MARKS)
    gate.update(now_ms=0, backlogs={"t": _unmerged(500)}, memory_used=0)
    gate.evaluate("t", buckets=1)
    gate.update(now_ms=500, backlogs={}, memory_used=0)
    assert not gate.pressured("t")

"""Backpressure decisions: pause before one more batch could pass the mark, resume at half."""

from __future__ import annotations

from mapper.backpressure import BackpressureGate, PressureMarks

MARKS = PressureMarks(backlog_high_datasets=100, redis_memory_high_bytes=1000)


def test_pressured_as_soon_as_one_more_batch_could_pass_the_mark() -> None:
    gate = BackpressureGate(MARKS)
    gate.update(now_ms=0, backlogs={"t": 80}, memory_used=0)
    gate.evaluate("t", buckets=8)
    assert not gate.pressured("t")
    gate.note_written("t", 8, buckets=8)  # 88 + 8 > 100? no, 96 <= 100
    assert not gate.pressured("t")
    gate.note_written("t", 5, buckets=8)  # 93 + 8 > 100
    assert gate.pressured("t")


def test_resumes_only_below_half_of_the_mark() -> None:
    gate = BackpressureGate(MARKS)
    gate.update(now_ms=0, backlogs={"t": 100}, memory_used=0)
    gate.evaluate("t", buckets=4)
    assert gate.pressured("t")
    gate.update(now_ms=500, backlogs={"t": 60}, memory_used=0)
    gate.evaluate("t", buckets=4)
    assert gate.pressured("t"), "between half and the mark: stay paused (hysteresis)"
    gate.update(now_ms=1000, backlogs={"t": 49}, memory_used=0)
    gate.evaluate("t", buckets=4)
    assert not gate.pressured("t")


def test_redis_memory_pauses_every_task_until_half() -> None:
    gate = BackpressureGate(MARKS)
    gate.update(now_ms=0, backlogs={"a": 0, "b": 0}, memory_used=1000)
    assert gate.pressured("a") and gate.pressured("b")
    gate.update(now_ms=500, backlogs={"a": 0, "b": 0}, memory_used=600)
    assert gate.pressured("a")
    gate.update(now_ms=1000, backlogs={"a": 0, "b": 0}, memory_used=499)
    assert not gate.pressured("a") and not gate.pressured("b")


def test_checks_redis_at_most_every_interval() -> None:
    gate = BackpressureGate(MARKS)
    assert gate.due(0)
    gate.update(now_ms=0, backlogs={}, memory_used=0)
    assert not gate.due(499)
    assert gate.due(500)


def test_a_removed_task_is_no_longer_pressured() -> None:
    gate = BackpressureGate(MARKS)
    gate.update(now_ms=0, backlogs={"t": 500}, memory_used=0)
    gate.evaluate("t", buckets=1)
    gate.update(now_ms=500, backlogs={}, memory_used=0)
    assert not gate.pressured("t")

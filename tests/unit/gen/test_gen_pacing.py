"""The producer's rate pacer, driven by a fake clock."""

from __future__ import annotations

import pytest

from devtools.gen.pacing import RatePacer


class FakeTime:
    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_sleeps_until_each_record_is_due() -> None:
    fake = FakeTime()
    pacer = RatePacer(rate=1000, clock=fake.clock, sleep=fake.sleep)
    assert pacer.wait_until_due(0) == 0.0  # starts the schedule
    assert pacer.wait_until_due(500) == pytest.approx(0.5)
    fake.now += 2.0  # the sender was slow: no sleep, and no catch-up debt either way
    assert pacer.wait_until_due(1000) == 0.0
    assert pacer.wait_until_due(3000) == pytest.approx(0.5)
    assert fake.now == pytest.approx(103.0)


def test_unpaced_never_sleeps() -> None:
    fake = FakeTime()
    pacer = RatePacer(rate=None, clock=fake.clock, sleep=fake.sleep)
    assert [pacer.wait_until_due(n) for n in (0, 10**9)] == [0.0, 0.0]
    assert fake.slept == []


def test_rate_must_be_positive() -> None:
    with pytest.raises(ValueError):
        RatePacer(rate=0)


def test_retime_changes_the_rate_from_now_without_a_burst_or_a_pause() -> None:
    fake = FakeTime()
    pacer = RatePacer(rate=1000, clock=fake.clock, sleep=fake.sleep)
    pacer.wait_until_due(0)
    pacer.wait_until_due(1000)  # one second in, on schedule
    pacer.retime(100, sent=1000)
    assert pacer.wait_until_due(1050) == pytest.approx(0.5)  # 50 more at 100/s
    pacer.retime(1000, sent=1050)
    fake.now += 0.05  # the next 50 are due now: no sleep owed to the slow stretch
    assert pacer.wait_until_due(1100) == 0.0
    assert pacer.wait_until_due(2100) == pytest.approx(1.0)
    with pytest.raises(ValueError):
        pacer.retime(0, sent=2100)

"""Idleness needs an unbroken run of confirmed caught-up checks; any break restarts it."""

from __future__ import annotations

from mapper.caught_up import CaughtUpTracker

P = ("topic", 0)


def test_the_run_starts_at_the_first_confirmed_check_and_lasts() -> None:
    tracker = CaughtUpTracker()
    assert tracker.confirmed(P, caught_up=True, now_ms=1_000) == 1_000
    assert tracker.confirmed(P, caught_up=True, now_ms=1_500) == 1_000


def test_a_failed_check_an_outage_restarts_the_run() -> None:
    tracker = CaughtUpTracker()
    tracker.confirmed(P, caught_up=True, now_ms=1_000)
    assert tracker.confirmed(P, caught_up=False, now_ms=2_000) is None  # broker did not answer
    assert tracker.confirmed(P, caught_up=True, now_ms=90_000) == 90_000  # back after the outage


def test_a_consumed_record_restarts_the_run() -> None:
    tracker = CaughtUpTracker()
    tracker.confirmed(P, caught_up=True, now_ms=1_000)
    tracker.consumed(P)
    assert tracker.confirmed(P, caught_up=True, now_ms=1_200) == 1_200


def test_partitions_not_owned_any_more_are_forgotten() -> None:
    tracker = CaughtUpTracker()
    tracker.confirmed(P, caught_up=True, now_ms=1_000)
    tracker.forget(set())
    assert tracker.confirmed(P, caught_up=True, now_ms=5_000) == 5_000

"""What `mars spark preagg` tells the user when it ends: totals, and when the windows come."""

from __future__ import annotations

from spark.summary import BackfillSummary, PartitionSummary


def summary(*times: int | None) -> BackfillSummary:
    parts = [PartitionSummary(partition=p, stream_time_ms=t) for p, t in enumerate(times)]
    return BackfillSummary.of(task="t", job="j", parts=parts, elapsed_s=1.0)


def test_the_completion_names_the_newest_event_time_and_idle_close() -> None:
    text = summary(1_700_000_000_000, None, 1_700_000_060_000).completion(idle_timeout_ms=10_000)
    assert "2023-11-14T22:14:20.000Z" in text  # the newest of the partitions
    assert "idle close, about 10 s" in text and "mars task resume" in text


def test_a_history_without_event_times_has_no_window_to_wait_for() -> None:
    assert "no window" in summary(None).completion(idle_timeout_ms=10_000)

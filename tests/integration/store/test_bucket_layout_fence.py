"""The bucket-layout fence against a real Redis: `change_layout` and `apply_batch` together
keep every (window, group) in one bucket while a task's bucket count changes."""

from __future__ import annotations

import pytest

from mars.store import BucketLayoutChangedError, SeqStore, SourceState
from mars.tasks.bucket_layout import BucketLayout


def _write(
    store: SeqStore, task: str, *, offset: int, layout: BucketLayout, last_window: int
) -> dict[int, int]:
    """One batch of partition 0 (records up to `offset`) with windows up to `last_window`."""
    result = store.apply_batch(
        task,
        expected={0: offset - 1},
        sources={0: SourceState(applied_offset=offset, stream_time_ms=last_window)},
        datasets={0: b"partials"},
        counters={"records_in": 1, "accepted": 1},
        now_ms=1,
        layout=layout,
        last_window_start_ms=last_window,
    )
    assert result.applied
    return dict(result.seqs)


def test_the_new_epoch_starts_after_every_window_written(store: SeqStore, task: str) -> None:
    initial = BucketLayout(initial=2)
    _write(store, task, offset=0, layout=initial, last_window=120_000)
    _write(store, task, offset=1, layout=initial, last_window=60_000)  # a late window

    epoch = store.change_layout(task, generation=0, buckets=6)

    assert (epoch.changed, epoch.generation, epoch.from_window_ms, epoch.buckets) == (
        True,
        1,
        120_001,
        6,
    )


def test_a_writer_on_the_old_count_is_refused_from_the_new_epoch_on(
    store: SeqStore, task: str
) -> None:
    initial = BucketLayout(initial=2)
    _write(store, task, offset=0, layout=initial, last_window=120_000)
    epoch = store.change_layout(task, generation=0, buckets=6)
    assert epoch.from_window_ms is not None
    grown = initial.changed(from_window_ms=epoch.from_window_ms, buckets=6)

    # Windows before the new epoch: the old count routes them right, even now.
    _write(store, task, offset=1, layout=initial, last_window=120_000)
    with pytest.raises(BucketLayoutChangedError, match="generation 1 in Redis, the writer used 0"):
        _write(store, task, offset=2, layout=initial, last_window=180_000)
    assert _write(store, task, offset=2, layout=grown, last_window=180_000) == {0: 3}


def test_a_change_from_a_stale_generation_returns_the_stored_epoch(
    store: SeqStore, task: str
) -> None:
    first = store.change_layout(task, generation=0, buckets=4)
    again = store.change_layout(task, generation=0, buckets=8)

    assert first.changed and not again.changed
    assert (again.generation, again.from_window_ms, again.buckets) == (
        1,
        first.from_window_ms,
        4,
    )
    later = store.change_layout(task, generation=1, buckets=8)
    assert later.changed and later.from_window_ms == (first.from_window_ms or 0) + 1


def test_a_writer_ahead_of_redis_restores_the_generation(store: SeqStore, task: str) -> None:
    """Redis lost the change (restarted without its last writes): the writer knows it."""
    ahead = BucketLayout(initial=2).changed(from_window_ms=60_000, buckets=6)
    _write(store, task, offset=0, layout=ahead, last_window=90_000)

    stale = store.change_layout(task, generation=0, buckets=3)

    assert (stale.changed, stale.generation, stale.from_window_ms) == (False, 1, 60_000)
    with pytest.raises(BucketLayoutChangedError):
        _write(store, task, offset=1, layout=BucketLayout(initial=2), last_window=90_000)

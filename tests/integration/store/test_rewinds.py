"""`RewindStore` against a real Redis: one script fixes a rewind's hand-over offsets, bucket
markers and watermark hold; the reducer's unit snapshot shows it after the snapshots."""

from __future__ import annotations

from mars.store import SeqStore, SourceState


def _write(store: SeqStore, task: str, partition: int, offset: int, buckets: list[int]) -> None:
    result = store.apply_batch(
        task,
        expected={partition: offset - 1},
        sources={partition: SourceState(applied_offset=offset, stream_time_ms=1_000)},
        datasets={b: b"partials" for b in buckets},
        counters={},
        now_ms=1,
    )
    assert result.applied


def test_a_rewind_fixes_handovers_markers_and_a_hold(store: SeqStore, task: str) -> None:
    _write(store, task, 0, 0, [0, 1])
    _write(store, task, 0, 1, [1])
    _write(store, task, 1, 0, [1])

    first = store.rewinds.begin(
        task, from_window_ms=60_000, from_ms=61_000, starts=[0, 5, 3], buckets=3, now_ms=7
    )

    assert first.generation == 1 and first.from_window_ms == 60_000
    # H[p] = applied + 1; a start beyond it is clamped (nothing to re-read there).
    assert first.handovers == (2, 1, 0) and first.starts == (0, 1, 0)
    assert first.seqs == (1, 3, 0)
    idle = f"{task}-idle"  # another task: asked in the same round trip, it has none
    assert store.rewinds.pending([task, idle]) == {task: [first], idle: []}
    unit = store.snapshot_unit(task, {1: 0})
    assert "rewind:1" in unit.backfill_holds and unit.rewinds == (first,)

    _write(store, task, 0, 2, [0])
    second = store.rewinds.begin(
        task, from_window_ms=0, from_ms=0, starts=[0, 0], buckets=2, now_ms=8
    )
    assert second.generation == 2 and second.handovers == (3, 1) and second.seqs == (2, 3)
    assert store.rewinds.rewinds(task) == [first, second]

    store.rewinds.finish(task, first)
    assert store.rewinds.pending([task]) == {task: [second]}
    store.rewinds.finish(task, second)
    assert store.rewinds.pending([task]) == {task: []}
    assert not store.snapshot_unit(task, {0: 0}).backfill_holds

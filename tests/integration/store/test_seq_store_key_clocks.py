"""`watermark = 'key'`: the key clocks go into Redis with the applied offset, in the same
atomic apply, and come back with the source states (also on a rejected batch)."""

from __future__ import annotations

from mars.store import ApplyStatus, SeqStore, SourceState


def test_key_clocks_are_applied_with_the_offset_and_read_back(store: SeqStore, task: str) -> None:
    blob = b"\x00\xffclocks-of-0"
    result = store.apply_batch(
        task,
        expected={0: -1, 1: -1},
        sources={
            0: SourceState(applied_offset=9, stream_time_ms=1_000, key_clocks=blob),
            1: SourceState(applied_offset=4, stream_time_ms=700),
        },
        datasets={0: b"d"},
        counters={"records_in": 1},
        now_ms=5_000,
    )
    assert result.status is ApplyStatus.APPLIED
    sources = store.read_sources(task)
    assert sources[0].key_clocks == blob and sources[1].key_clocks is None
    assert store.read_source_states(task, [0])[0].key_clocks == blob


def test_a_rejected_batch_writes_no_clocks_and_answers_the_stored_ones(
    store: SeqStore, task: str
) -> None:
    first = SourceState(applied_offset=9, stream_time_ms=1_000, key_clocks=b"first")
    store.apply_batch(
        task, expected={0: -1}, sources={0: first}, datasets={}, counters={}, now_ms=1
    )
    stale = store.apply_batch(
        task,
        expected={0: -1},
        sources={0: SourceState(applied_offset=20, stream_time_ms=2_000, key_clocks=b"stale")},
        datasets={},
        counters={},
        now_ms=2,
    )
    assert stale.status is ApplyStatus.REJECTED
    assert stale.sources[0].applied_offset == 9 and stale.sources[0].key_clocks == b"first"
    assert store.read_sources(task)[0].key_clocks == b"first"

"""The watermark computed from a snapshot: min of active partitions, idleness, idle close."""

from __future__ import annotations

from mars.store import LiveState, Snapshot, SourceState, watermark_of
from mars.store.state import pack_live, unpack_live

IDLE = 10_000


def _snapshot(
    sources: dict[int, SourceState],
    live: dict[int, LiveState] | None = None,
    partition_count: int | None = 2,
) -> Snapshot:
    return Snapshot(
        bucket=0, seq=0, rseq=1, sources=sources, live=live or {}, partition_count=partition_count
    )


def _src(stream_time: int | None, last_data: int | None = 0) -> SourceState:
    return SourceState(applied_offset=1, stream_time_ms=stream_time, last_data_wall_ms=last_data)


def _live(caught_up: bool, heartbeat: int) -> LiveState:
    return LiveState(caught_up=caught_up, heartbeat_wall_ms=heartbeat)


def test_min_over_partitions() -> None:
    snap = _snapshot({0: _src(5_000), 1: _src(3_000)})
    assert watermark_of(snap, idle_timeout_ms=IDLE, now_ms=1) == 3_000


def test_unknown_partition_count_or_unwritten_partition_holds_it_back() -> None:
    assert (
        watermark_of(_snapshot({0: _src(1)}, partition_count=None), idle_timeout_ms=IDLE, now_ms=1)
        is None
    )
    assert watermark_of(_snapshot({0: _src(1)}), idle_timeout_ms=IDLE, now_ms=1) is None


def test_idle_caught_up_partition_is_left_out() -> None:
    now = 100_000
    sources = {0: _src(5_000, last_data=now - 100), 1: _src(3_000, last_data=now - IDLE)}
    live = {0: _live(True, now), 1: _live(True, now - 500)}
    assert watermark_of(_snapshot(sources, live), idle_timeout_ms=IDLE, now_ms=now) == 5_000


def test_not_idle_when_behind_or_heartbeat_stale_or_data_recent() -> None:
    now = 100_000
    old = now - 2 * IDLE
    sources = {0: _src(5_000, last_data=now), 1: _src(3_000, last_data=old)}
    for live_1 in (_live(False, now), _live(True, now - IDLE - 1), None):
        live = {0: _live(True, now)} | ({1: live_1} if live_1 else {})
        assert watermark_of(_snapshot(sources, live), idle_timeout_ms=IDLE, now_ms=now) == 3_000
    # Partition 1 is idle but 0 had data just now: 0 is active, 1 is left out.
    live = {0: _live(True, now), 1: _live(True, now)}
    assert watermark_of(_snapshot(sources, live), idle_timeout_ms=IDLE, now_ms=now) == 5_000


def test_never_written_but_idle_partition_does_not_block() -> None:
    now = 50_000
    live = {0: _live(False, now), 1: _live(True, now)}
    snap = _snapshot({0: _src(7_000, last_data=now)}, live)
    assert watermark_of(snap, idle_timeout_ms=IDLE, now_ms=now) == 7_000


def test_all_idle_advances_with_wall_clock_from_the_newest_stream_time() -> None:
    now = 100_000
    sources = {0: _src(5_000, last_data=now - 15_000), 1: _src(9_000, last_data=now - 12_000)}
    live = {0: _live(True, now), 1: _live(True, now)}
    snap = _snapshot(sources, live)
    assert watermark_of(snap, idle_timeout_ms=IDLE, now_ms=now) == 9_000 + 12_000
    assert watermark_of(snap, idle_timeout_ms=IDLE, now_ms=now + 5_000) == 9_000 + 17_000


def test_all_idle_without_any_data_is_unknown() -> None:
    live = {0: _live(True, 1), 1: _live(True, 1)}
    assert watermark_of(_snapshot({}, live), idle_timeout_ms=IDLE, now_ms=1) is None


def test_an_outage_never_makes_a_partition_idle_by_itself() -> None:
    """Data stopped long ago because the broker was down; it answers again at `back`. The
    partition counts as idle only after a whole idle_timeout of confirmed caught-up checks."""
    back = 500_000
    sources = {0: _src(5_000, last_data=100_000), 1: _src(3_000, last_data=100_000)}

    def watermark(now: int) -> int | None:
        live = {
            0: LiveState(caught_up=True, heartbeat_wall_ms=now, caught_up_since_ms=back),
            1: LiveState(caught_up=True, heartbeat_wall_ms=now, caught_up_since_ms=back),
        }
        return watermark_of(_snapshot(sources, live), idle_timeout_ms=IDLE, now_ms=now)

    assert watermark(back + IDLE - 1) == 3_000, "not idle yet: no idle close, nothing turns late"
    assert watermark(back + IDLE) == 5_000 + (back + IDLE - 100_000)  # idle close from now on


def test_all_idle_after_a_backfill_advances_from_when_the_mappers_caught_up() -> None:
    """A Spark backfill applied the history: the live sources hold its stream time but no
    mapper batch ever moved them (no last data time). Idle close still comes, counted from
    when the mappers confirmed the partitions caught up."""
    since = 200_000
    sources = {0: _src(5_000, last_data=None), 1: _src(9_000, last_data=None)}

    def watermark(now: int) -> int | None:
        live = {
            p: LiveState(caught_up=True, heartbeat_wall_ms=now, caught_up_since_ms=since)
            for p in (0, 1)
        }
        return watermark_of(_snapshot(sources, live), idle_timeout_ms=IDLE, now_ms=now)

    assert watermark(since + IDLE - 1) == 5_000  # not idle yet
    assert watermark(since + IDLE) == 9_000 + IDLE
    assert watermark(since + IDLE + 60_000) == 9_000 + IDLE + 60_000


def test_liveness_packs_since_when_caught_up() -> None:
    state = LiveState(caught_up=True, heartbeat_wall_ms=9, caught_up_since_ms=3)
    assert unpack_live(pack_live(state)) == state
    assert unpack_live("1:9") == LiveState(caught_up=True, heartbeat_wall_ms=9)

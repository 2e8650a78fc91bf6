"""Packed encodings and key names of the SEQ protocol."""

from __future__ import annotations

import pytest

from mars.store import LiveState, SourceState, TaskKeys
from mars.store.state import (
    pack_live,
    pack_source,
    parse_source_field,
    unpack_live,
    unpack_source,
)


@pytest.mark.parametrize(
    "state",
    [
        SourceState(),
        SourceState(applied_offset=0, stream_time_ms=1_700_000_000_123, last_data_wall_ms=5),
        SourceState(applied_offset=2**62, stream_time_ms=-5, last_data_wall_ms=None),
    ],
)
def test_source_state_round_trip(state: SourceState) -> None:
    assert unpack_source(pack_source(state)) == state
    assert unpack_source(pack_source(state).encode()) == state


def test_live_state_round_trip() -> None:
    for state in (
        LiveState(caught_up=True, heartbeat_wall_ms=9),
        LiveState(caught_up=False, heartbeat_wall_ms=0),
    ):
        assert unpack_live(pack_live(state)) == state


def test_source_fields() -> None:
    assert parse_source_field("12") == 12
    assert parse_source_field("backfill:job:12") == "backfill:job:12"


def test_task_keys_share_one_hash_tag() -> None:
    keys = TaskKeys("clicks")
    names = [
        keys.sources,
        keys.live,
        keys.stats,
        keys.results,
        keys.seq(3),
        keys.rseq(3),
        keys.datasets(3),
    ]
    assert all(name.startswith("mars:{clicks}:") for name in names)
    assert keys.datasets(3) == "mars:{clicks}:b:3:d"
    assert TaskKeys("a*[b]").scan_pattern == "mars:{a\\*\\[b\\]}:*"
    with pytest.raises(ValueError):
        TaskKeys("bad{id}")
    with pytest.raises(ValueError):
        TaskKeys("")

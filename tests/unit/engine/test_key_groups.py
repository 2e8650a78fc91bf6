"""`WITH (watermark = 'key', key_groups = N)`: keys hashed into N clocks; a record is late
against its group's clock (the largest time of any key of the group in its partition), decided
record by record whatever the batches; the clocks stored are at most N a partition."""

from __future__ import annotations

import dataclasses

import pytest
from engine_helpers import make_spec
from test_key_lateness import reference, run, skewed_stream

from mars.engine.key_clocks import decode_clocks
from mars.engine.key_groups import key_group
from mars.sql import parse_task
from mars.tasks.spec import TaskSpec, WatermarkMode
from reducer.key_timers import KeyTimers
from tests.differential.cases import key_group as oracle_key_group


def grouped(spec: TaskSpec, groups: int, lag_ms: int = 600_000) -> TaskSpec:
    options = dataclasses.replace(
        spec.options, watermark=WatermarkMode.KEY, key_lag_ms=lag_ms, key_groups=groups
    )
    return dataclasses.replace(spec, options=options)


@pytest.mark.parametrize("groups", [1, 2, 5])
@pytest.mark.parametrize("slide_ms", [None, 20])
def test_matches_the_record_by_record_rule_whatever_the_batches(
    groups: int, slide_ms: int | None
) -> None:
    base = make_spec(size_ms=40, slide_ms=slide_ms, grace_ms=10)
    records = skewed_stream(groups, n=150, keys=9)
    for lag_ms in (100, 600_000):
        expected = reference(base, records, lag_ms, groups=groups)
        for batch in (1, 7, 500):
            windows, late, clocks = run(grouped(base, groups, lag_ms), records, batch)
            assert (windows, late) == expected, (lag_ms, batch)
            for data in clocks.values():
                frame = decode_clocks(data)
                assert frame is None or frame.height <= groups  # O(N), not O(keys)


def test_one_group_is_the_partition_rule() -> None:
    base = make_spec(size_ms=40, grace_ms=10)
    records = skewed_stream(3, n=200)
    windows, late, _ = run(grouped(base, 1), records, 9)
    assert (windows, late) == run(base, records, 9)[:2]


def test_the_group_is_the_same_in_every_process_and_spreads() -> None:
    keys = [(f"device-{i}",) for i in range(400)] + [(i, None) for i in range(100)]
    for key in keys:
        assert key_group(key, 16) == oracle_key_group(list(key), 16)  # the oracle's own copy
    counts = [0] * 16
    for key in keys:
        counts[key_group(key, 16)] += 1
    assert min(counts) > 500 / 16 / 3


def test_reducer_clocks_are_per_group() -> None:
    timers = KeyTimers(groups=4)
    for i in range(100):
        timers.raise_clock((f"k{i}",), i)
    assert len(timers.clocks) <= 4
    assert timers.clock(("k7",)) == max(
        i for i in range(100) if key_group((f"k{i}",), 4) == key_group(("k7",), 4)
    )


def test_key_groups_parse_and_are_refused_without_key_watermarks() -> None:
    base = "SELECT k, count(*) AS n FROM S GROUP BY k WINDOWING 1 m"
    spec = parse_task(f"{base} WITH (watermark = 'key', key_groups = 64)", task_id="t")
    assert spec.options.key_groups == 64
    assert TaskSpec.from_json_dict(spec.to_json_dict()) == spec
    for bad in ("key_groups = 64", "watermark = 'key', key_groups = 0"):
        with pytest.raises(Exception, match="key_groups"):
            parse_task(f"{base} WITH ({bad})", task_id="t")

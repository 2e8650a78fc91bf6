"""`watermark = 'key'` in the pre-aggregation (docs/semantics.md, "Key watermarks"): a record is
late only against its own key's clock (or its partition's stream time less `key_lag`), decided
record by record whatever the batches, with the clocks carried like the stream times."""

from __future__ import annotations

import dataclasses
import json
import random
from collections.abc import Sequence

import pytest
from engine_helpers import json_records, make_spec

from mars.engine.dataset import OpenWindows, decode_dataset, merge_groups
from mars.engine.key_clocks import decode_clocks
from mars.engine.key_groups import key_group
from mars.engine.preaggregate import Preaggregator
from mars.engine.records import SourceRecord
from mars.tasks.spec import AggFunc, TaskSpec, WatermarkMode
from mars.windows import WindowAssigner


def keyed(spec: TaskSpec, lag_ms: int = 600_000) -> TaskSpec:
    options = dataclasses.replace(spec.options, watermark=WatermarkMode.KEY, key_lag_ms=lag_ms)
    return dataclasses.replace(spec, options=options)


def run(
    spec: TaskSpec, records: Sequence[SourceRecord], batch: int
) -> tuple[OpenWindows, list[tuple[int, int]], dict[int, bytes]]:
    """Feed `records` in batches of `batch`, carrying stream times and key clocks as the
    mapper does; (windows without the key-time state, late (partition, offset), clocks)."""
    preaggregator = Preaggregator.for_spec(spec)
    stream_times: dict[int, int] = {}
    clocks: dict[int, bytes] = {}
    windows: OpenWindows = {}
    late: list[tuple[int, int]] = []
    for position in range(0, len(records), batch):
        partials = preaggregator.run(
            records[position : position + batch],
            dict(stream_times),
            now_ms=0,
            key_clocks=dict(clocks),
        )
        stream_times, clocks = partials.stream_times, {**clocks, **partials.key_clocks}
        late += [(r.partition, r.offset) for r in partials.late]
        for data in partials.datasets.values():
            dataset = decode_dataset(data)
            for start, groups in dataset.windows.items():
                counts = {key: states[:1] for key, states in groups.items()}
                merge_groups(dataset.aggregates[:1], windows.setdefault(start, {}), counts)
    return windows, sorted(late), clocks


def reference(
    spec: TaskSpec,
    records: Sequence[SourceRecord],
    lag_ms: int | None,
    *,
    groups: int | None = None,
) -> tuple[OpenWindows, list[tuple[int, int]]]:
    """Record by record: the rule of docs/semantics.md (`lag_ms` None: partition mode), a
    clock per (partition, key), or per (partition, key group) with `groups`."""
    assigner = WindowAssigner.from_spec(spec.window)
    stream: dict[int, int] = {}
    clock: dict[tuple[int, object], int] = {}
    windows: OpenWindows = {}
    late: list[tuple[int, int]] = []
    for record in records:
        row = json.loads(record.value)
        p, key, t = record.partition, row["k"], row["ts"]
        clock_id = key if groups is None else key_group((key,), groups)
        st = stream.get(p)
        if lag_ms is None:
            effective = st
        else:
            terms = [c for c in (clock.get((p, clock_id)), None if st is None else st - lag_ms)]
            known = [c for c in terms if c is not None]
            effective = max(known) if known else None
        starts = [
            s
            for s in assigner.window_starts(t)
            if effective is None or assigner.closes_at(s) > effective
        ]
        if not starts:
            late.append((p, record.offset))
        for s in starts:
            group = windows.setdefault(s, {}).setdefault((key,), [0])
            group[0] += 1
        stream[p] = t if st is None else max(st, t)
        clock[(p, clock_id)] = max(clock.get((p, clock_id), t), t)
    return windows, sorted(late)


def skewed_stream(
    seed: int, *, partitions: int = 2, keys: int = 6, n: int = 300
) -> list[SourceRecord]:
    """Keys each in one partition, each key's clock skewed by its own offset, mostly in
    order with some jitter, interleaved across keys."""
    rng = random.Random(seed)
    skew = {f"k{i}": -rng.randrange(0, 400) for i in range(keys)}
    offsets = dict.fromkeys(range(partitions), 0)
    out: list[SourceRecord] = []
    for step in range(n):
        key = f"k{rng.randrange(keys)}"
        partition = int(key[1:]) % partitions
        ts = max(0, step * 5 + skew[key] + rng.randrange(-30, 10))
        value = json.dumps({"ts": ts, "k": key}).encode()
        out.append(SourceRecord(partition=partition, offset=offsets[partition], value=value))
        offsets[partition] += 1
    return out


def test_an_in_order_lagging_key_is_late_only_in_partition_mode() -> None:
    spec = make_spec(size_ms=10)
    # 'fast' is at 100 while 'slow' (its clock 60 ms behind) sends 40, 45, 50 in order.
    rows = [{"ts": t, "k": k} for t, k in [(100, "fast"), (40, "slow"), (45, "slow"), (50, "slow")]]
    records = json_records(rows)
    _, partition_late, _ = run(spec, records, 100)
    assert partition_late == [(0, 1), (0, 2), (0, 3)]
    windows, key_late, _ = run(keyed(spec), records, 100)
    assert key_late == []
    assert windows[40] == {("slow",): [2]} and windows[50] == {("slow",): [1]}


def test_a_record_behind_its_own_key_clock_is_late() -> None:
    spec = keyed(make_spec(size_ms=10, grace_ms=5))
    # 'a': 30 then 14 -> [10, 20) ends at 20, + grace 5 = 25 <= 30: late. 'b': 16 is its first.
    rows = [{"ts": 30, "k": "a"}, {"ts": 14, "k": "a"}, {"ts": 16, "k": "b"}, {"ts": 26, "k": "a"}]
    _, late, _ = run(spec, json_records(rows), 1)
    assert late == [(0, 1)]


def test_key_lag_bounds_how_far_a_key_may_trail_its_partition() -> None:
    spec = keyed(make_spec(size_ms=10), lag_ms=50)
    rows = [{"ts": 1000, "k": "fast"}, {"ts": 955, "k": "slow"}, {"ts": 930, "k": "slow"}]
    _, late, _ = run(spec, json_records(rows), 1)
    # 955 is in [950, 960): 960 > 1000 - 50; 930's window [930, 940) ends at or below 950.
    assert late == [(0, 2)]


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("slide_ms", [None, 20])
def test_matches_the_record_by_record_rule_whatever_the_batches(
    seed: int, slide_ms: int | None
) -> None:
    base = make_spec(size_ms=40, slide_ms=slide_ms, grace_ms=10)
    records = skewed_stream(seed, n=120)
    for lag_ms in (0, 100, 600_000):
        expected = reference(base, records, lag_ms)
        for batch in (1, 7, 500):
            windows, late, _ = run(keyed(base, lag_ms), records, batch)
            assert (windows, late) == expected, (lag_ms, batch)
    # key_lag 0 is the partition rule exactly.
    assert reference(base, records, 0) == reference(base, records, None)
    windows, late, _ = run(base, records, 13)
    assert (windows, late) == reference(base, records, None)


def test_key_mode_has_fewer_late_records_on_skewed_keys() -> None:
    base = make_spec(size_ms=40, grace_ms=10)
    records = skewed_stream(1, n=600)
    _, partition_late, _ = run(base, records, 50)
    _, key_late, _ = run(keyed(base), records, 50)
    assert len(key_late) < len(partition_late) / 4


def test_clocks_at_or_below_stream_time_less_lag_are_dropped() -> None:
    spec = keyed(make_spec(size_ms=10), lag_ms=100)
    rows = [{"ts": 10, "k": "old"}, {"ts": 50, "k": "b"}, {"ts": 200, "k": "c"}]
    _, _, clocks = run(spec, json_records(rows), 1)
    frame = decode_clocks(clocks[0])
    assert frame is not None
    # 'old' at 10 and 'b' at 50 are at or below 200 - 100: gone; 'c' stays.
    assert frame.rows() == [("c", 200)]


def test_no_group_by_is_one_key() -> None:
    spec = keyed(make_spec(size_ms=10, keys=(), aggregates=((AggFunc.COUNT, None, "n"),)))
    rows = [{"ts": 30}, {"ts": 14}, {"ts": 35}]
    partials = Preaggregator.for_spec(spec).run(json_records(rows), {}, now_ms=0)
    assert [r.offset for r in partials.late] == [1]


def test_a_key_of_another_type_in_a_later_batch_keeps_each_key_its_clock() -> None:
    spec = keyed(make_spec(size_ms=10))
    # Batch 1: string keys; batch 2: only NULL keys (a Null column); batch 3: 'a' again.
    rows = [{"ts": 50, "k": "a"}, {"ts": 20, "k": None}, {"ts": 12, "k": "a"}]
    windows, late, clocks = run(spec, json_records(rows), 1)
    # The NULL key's first record is on time ('a' at 50 is not its clock); 'a' at 12 is late.
    assert late == [(0, 2)]
    assert windows[20] == {(None,): [1]}
    frame = decode_clocks(clocks[0])
    assert frame is not None and sorted(frame.rows(), key=repr) == [("a", 50), (None, 20)]


def test_int_keys_then_float_keys_align() -> None:
    spec = keyed(make_spec(size_ms=10))
    rows = [{"ts": 50, "k": 1}, {"ts": 12, "k": 1.5}, {"ts": 13, "k": 1}]
    _, late, _ = run(spec, json_records(rows), 1)
    assert late == [(0, 2)]  # key 1's clock is 50; 1.5 has a clock of its own


def test_a_partition_without_rows_in_the_batch_keeps_its_clocks() -> None:
    spec = keyed(make_spec(size_ms=10))
    preaggregator = Preaggregator.for_spec(spec)
    first = preaggregator.run(json_records([{"ts": 50, "k": "a"}], partition=1), {}, now_ms=0)
    second = preaggregator.run(
        json_records([{"ts": 5, "k": "b"}], partition=0),
        {1: first.stream_times[1]},
        now_ms=0,
        key_clocks={1: first.key_clocks[1], 0: None},
    )
    assert second.key_clocks[1] == first.key_clocks[1] or (
        decode_clocks(second.key_clocks[1]) is not None
        and decode_clocks(second.key_clocks[1]).rows() == [("a", 50)]  # type: ignore[union-attr]
    )

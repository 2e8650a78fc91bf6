"""The outcome of pre-aggregation must not depend on where batch boundaries fall.

A per-record reference model (the rules of docs/semantics.md, written the slow obvious way) is
compared with the engine run over the same input in batches of 1, 7, 5,000 and random sizes:
same merged partial states, same late records, same bad records.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from engine_helpers import canonical_hll, make_spec, run_in_batches
from hypothesis import given, settings
from hypothesis import strategies as st

from mars.aggregates import aggregates_for
from mars.engine.dataset import OpenWindows
from mars.engine.records import SourceRecord
from mars.tasks.spec import AggFunc, TaskSpec
from mars.windows import WindowAssigner

AGGREGATES = [
    (AggFunc.COUNT, None, "n"),
    (AggFunc.COUNT, "v", "n_v"),
    (AggFunc.SUM, "v", "sum_v"),
    (AggFunc.MIN, "v", "min_v"),
    (AggFunc.MAX, "v", "max_v"),
    (AggFunc.AVG, "v", "avg_v"),
    (AggFunc.COUNT_DISTINCT, "v", "distinct_v"),
    (AggFunc.APPROX_COUNT_DISTINCT, "u", "approx_u"),
    (AggFunc.FIRST, "v", "first_v"),
    (AggFunc.LAST, "v", "last_v"),
    (AggFunc.FIRST, "u", "first_u"),
    (AggFunc.LAST, "u", "last_u"),
]

record_st = st.fixed_dictionaries(
    {
        "partition": st.integers(0, 2),
        "ts": st.integers(-8, 24),
        "k": st.sampled_from(["a", "b", "c", None]),
        "v": st.one_of(st.none(), st.integers(-1000, 1000)),
        "u": st.text(max_size=3),  # one JSON type per field (see decode.py)
        "kind": st.sampled_from(["ok"] * 12 + ["malformed", "no_ts", "string_v", "bad_ts"]),
    }
)


def encode(row: dict[str, Any]) -> bytes:
    kind = row["kind"]
    if kind == "malformed":
        return b'{"ts": 1, "k":'
    body = {key: row[key] for key in ("ts", "k", "v", "u")}
    if kind == "no_ts":
        del body["ts"]
    elif kind == "string_v":
        body["v"] = "12"
    elif kind == "bad_ts":
        body["ts"] = "soon"
    return json.dumps(body).encode()


def to_records(rows: list[dict[str, Any]]) -> list[SourceRecord]:
    next_offset = {0: 0, 1: 0, 2: 0}
    records = []
    for row in rows:
        p = row["partition"]
        records.append(SourceRecord(partition=p, offset=next_offset[p], value=encode(row)))
        next_offset[p] += 1
    return records


def reference(spec: TaskSpec, rows: list[dict[str, Any]]) -> tuple[OpenWindows, set[Any], set[Any]]:
    """Record-at-a-time semantics: the model the engine must match."""
    window = WindowAssigner.from_spec(spec.window)
    aggregates = aggregates_for(spec.aggregates)
    stream: dict[int, int] = {}
    windows: OpenWindows = {}
    late, bad = set(), set()
    for record, row in zip(to_records(rows), rows, strict=True):
        if row["kind"] != "ok":
            bad.add((record.partition, record.offset))
            continue
        ts, partition = row["ts"], record.partition
        before = stream.get(partition)
        if window.is_late(ts, before):
            late.add((partition, record.offset))
        else:
            args = {"v": row["v"], "u": row["u"], None: None}
            for start in window.window_starts(ts):
                if window.is_closed(start, before):
                    continue
                groups = windows.setdefault(start, {})
                states = groups.setdefault((row["k"],), [a.initial() for a in aggregates])
                groups[(row["k"],)] = [
                    # FIRST and LAST fold (event time, value) pairs
                    agg.add(
                        state,
                        (ts, args[call.argument]) if agg.by_event_time else args[call.argument],
                    )
                    for agg, state, call in zip(aggregates, states, spec.aggregates, strict=True)
                ]
        stream[partition] = ts if before is None else max(before, ts)
    return windows, late, bad


def comparable(windows: OpenWindows) -> dict[int, dict[Any, list[Any]]]:
    return {
        start: {
            key: [canonical_hll(s) if isinstance(s, bytes) else s for s in states]
            for key, states in groups.items()
        }
        for start, groups in windows.items()
    }


# (size, slide, grace): hand-picked hopping and tumbling shapes first, then any shape.
window_st = st.one_of(
    st.sampled_from([(4, 1, 2), (6, 2, 3), (5, 5, 2), (2, 2, 1), (7, 3, 0), (3, 2, 4)]),
    st.tuples(st.integers(1, 6), st.integers(1, 6), st.integers(0, 4)).map(
        lambda t: (max(t[0], t[1]), min(t[0], t[1]), t[2])
    ),
)


@settings(max_examples=50, deadline=None)
@given(
    rows=st.lists(record_st, min_size=1, max_size=60),
    window=window_st,
    random_sizes=st.lists(st.integers(1, 40), min_size=1, max_size=6),
)
def test_partials_and_rejections_do_not_depend_on_batch_boundaries(
    rows: list[dict[str, Any]], window: tuple[int, int, int], random_sizes: list[int]
) -> None:
    size, slide, grace = window
    spec = make_spec(aggregates=AGGREGATES, size_ms=size, slide_ms=slide, grace_ms=grace)
    expected_windows, expected_late, expected_bad = reference(spec, rows)
    records = to_records(rows)
    for sizes in ([1], [7], [5000], random_sizes):
        windows, late, bad, _ = run_in_batches(spec, records, sizes)
        assert comparable(windows) == comparable(expected_windows), sizes
        assert {(r.partition, r.offset) for r in late} == expected_late, sizes
        assert {(r.partition, r.offset) for r in bad} == expected_bad, sizes


@pytest.mark.parametrize("window", [(4, 1, 2), (6, 2, 3), (5, 5, 2), (2, 2, 1), (7, 3, 0)])
def test_dense_out_of_order_input_matches_the_model_for_every_batching(
    window: tuple[int, int, int],
) -> None:
    # Seeded dense input: many out-of-order records per partition near window closes, which
    # random generation above reaches only rarely.
    rng = random.Random(sum(window))
    kinds = ["ok"] * 12 + ["malformed", "no_ts", "string_v", "bad_ts"]
    rows = [
        {
            "partition": rng.randint(0, 2),
            "ts": rng.randint(-10, 30),
            "k": rng.choice(["a", "b", None]),
            "v": rng.choice([None, rng.randint(-50, 50)]),
            "u": rng.choice([str(rng.randint(0, 9)), "x", "y", ""]),
            "kind": rng.choice(kinds),
        }
        for _ in range(200)
    ]
    size, slide, grace = window
    spec = make_spec(aggregates=AGGREGATES, size_ms=size, slide_ms=slide, grace_ms=grace)
    expected_windows, expected_late, expected_bad = reference(spec, rows)
    assert expected_late, "the input should exercise lateness"
    records = to_records(rows)
    for sizes in ([1], [7], [5000], [3, 50, 1, 17]):
        windows, late, bad, _ = run_in_batches(spec, records, sizes)
        assert comparable(windows) == comparable(expected_windows), sizes
        assert {(r.partition, r.offset) for r in late} == expected_late, sizes
        assert {(r.partition, r.offset) for r in bad} == expected_bad, sizes

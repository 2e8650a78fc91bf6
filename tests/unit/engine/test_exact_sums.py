"""SUM and AVG over int64 values are exact past int64, as DuckDB's HUGEINT sum: Polars' Int64
sum wraps silently, so the mapper sums integer arguments in Int128 and the data set carries
sums beyond 64 bits (`mars.aggregates.msgpack_wire`)."""

from __future__ import annotations

from engine_helpers import json_records, make_spec, run_in_batches

from mars.tasks.spec import AggFunc

BIG = 2**63 - 1  # the largest int64


def test_sums_past_int64_are_exact_in_one_batch_and_across_batches() -> None:
    spec = make_spec(aggregates=((AggFunc.SUM, "v", "s"), (AggFunc.AVG, "v", "a")), size_ms=1_000)
    rows = [
        {"ts": 1, "k": "up", "v": BIG},
        {"ts": 2, "k": "up", "v": BIG},
        {"ts": 3, "k": "up", "v": BIG},
        {"ts": 4, "k": "down", "v": -BIG - 1},
        {"ts": 5, "k": "down", "v": -BIG - 1},
        {"ts": 6, "k": "small", "v": 7},
    ]
    for batch in (6, 1):
        windows, late, bad, _ = run_in_batches(spec, json_records(rows), [batch])
        assert not late and not bad
        assert windows[0][("up",)] == [3 * BIG, (3 * BIG, 3)]
        assert windows[0][("down",)] == [-2 * (BIG + 1), (-2 * (BIG + 1), 2)]
        assert windows[0][("small",)] == [7, (7, 1)]
        assert type(windows[0][("small",)][0]) is int

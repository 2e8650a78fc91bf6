from __future__ import annotations

from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mars.aggregates import aggregates_for, wire_name
from mars.engine.dataset import (
    DataSet,
    OpenWindows,
    decode_dataset,
    encode_dataset,
    merge_into,
)
from mars.engine.errors import DataSetFormatError
from mars.engine.finalize import (
    finalize_window,
    iso_utc,
    result_spec,
    select_top_k,
    window_rows,
    windows_rows,
)
from mars.sql import parse_task
from mars.tasks.spec import AggFunc, AggregateCall, TopK

CALLS = (
    AggregateCall(func=AggFunc.COUNT, argument=None, alias="n"),
    AggregateCall(func=AggFunc.SUM, argument="v", alias="s"),
    AggregateCall(func=AggFunc.AVG, argument="v", alias="a"),
    AggregateCall(func=AggFunc.COUNT_DISTINCT, argument="v", alias="d"),
    AggregateCall(func=AggFunc.APPROX_COUNT_DISTINCT, argument="v", alias="h"),
)
AGGS = aggregates_for(CALLS)

groups_st = st.dictionaries(
    st.integers(-5, 5).map(lambda w: w * 1000),
    st.dictionaries(
        st.tuples(st.one_of(st.none(), st.text(max_size=3)), st.integers(-3, 3)),
        st.lists(st.integers(-100, 100), max_size=5),
        max_size=4,
    ),
    max_size=3,
)


def states_of(values: list[int]) -> list[Any]:
    return [agg.fold(values) for agg in AGGS]


@given(windows=groups_st)
def test_dataset_round_trip(windows: dict[int, dict[tuple[Any, ...], list[int]]]) -> None:
    encoded = {w: {k: states_of(v) for k, v in g.items()} for w, g in windows.items()}
    data = encode_dataset(AGGS, encoded)
    decoded = decode_dataset(data)
    assert decoded.windows == encoded
    assert decoded.aggregate_names == (
        "count_all",
        "sum",
        "avg",
        "count_distinct",
        "approx_count_distinct",
    )
    # The same partials always give the same bytes.
    assert encode_dataset(AGGS, decoded.windows) == data


@given(windows=groups_st)
def test_checkpoint_encoding_round_trips_in_any_order(
    windows: dict[int, dict[tuple[Any, ...], list[int]]],
) -> None:
    encoded = {w: {k: states_of(v) for k, v in g.items()} for w, g in windows.items()}
    assert decode_dataset(encode_dataset(AGGS, encoded, canonical=False)).windows == encoded
    counts = aggregates_for(CALLS[:2])  # identity wire forms: the states go out as they are
    plain = {
        w: {k: [len(v), sum(v) if v else None] for k, v in g.items()} for w, g in windows.items()
    }
    assert decode_dataset(encode_dataset(counts, plain, canonical=False)).windows == plain


@given(values=st.lists(st.integers(-(2**63), 2**63 - 1), min_size=2, max_size=6))
def test_sums_beyond_64_bits_round_trip(values: list[int]) -> None:
    """SUM of int64 values can outgrow msgpack's ints (2**64 - 1 up, -2**63 down); it must still
    reach the reducer and its checkpoints exactly, as DuckDB's HUGEINT sum would give it."""
    encoded = {0: {("k",): states_of(values), ("big",): states_of([2**63 - 1] * 3)}}
    for canonical in (True, False):
        assert decode_dataset(encode_dataset(AGGS, encoded, canonical=canonical)).windows == encoded


def test_merge_into_combines_windows_and_groups() -> None:
    open_windows: OpenWindows = {}
    first = DataSet(aggregates=AGGS, windows={0: {("a", 1): states_of([1, 2])}})
    second = DataSet(
        aggregates=AGGS,
        windows={
            0: {("a", 1): states_of([2, 5]), ("b", 1): states_of([7])},
            10: {("a", 1): states_of([3])},
        },
    )
    merge_into(open_windows, first)
    merge_into(open_windows, second)
    merged = open_windows[0][("a", 1)]
    assert merged[:4] == states_of([1, 2, 2, 5])[:4]
    assert AGGS[4].result(merged[4]) == 3
    assert open_windows[0][("b", 1)] == states_of([7])
    assert open_windows[10][("a", 1)] == states_of([3])


def test_decode_dataset_rejects_bad_bytes_and_versions() -> None:
    with pytest.raises(DataSetFormatError, match="version"):
        decode_dataset(msgspec.msgpack.encode([2, ["count_all"], []]))
    with pytest.raises(DataSetFormatError):
        decode_dataset(b"\x00\x01")
    with pytest.raises(DataSetFormatError):
        decode_dataset(msgspec.msgpack.encode([1, ["no_such_aggregate"], []]))
    # A group with more states than aggregates: identity wire forms (decoded natively) or not.
    for names in (["count_all"], [wire_name(agg) for agg in AGGS]):
        states = [0] * (len(names) + 1)
        with pytest.raises(DataSetFormatError, match="malformed"):
            decode_dataset(msgspec.msgpack.encode([1, names, [[0, [[["a"], states]]]]]))


def paper_spec(extra: str = "") -> Any:
    return parse_task(
        "SELECT sip, type, count(*) AS n, sum(bytes) AS total, avg(bytes) AS mean, "
        f"count(*) * 2 AS double_n FROM S GROUP BY sip, type WINDOWING 60 s {extra}",
        task_id="paper",
    )


def groups_for(
    spec: Any, rows: dict[tuple[Any, ...], list[int]]
) -> dict[tuple[Any, ...], list[Any]]:
    aggs = aggregates_for(spec.aggregates)
    out = {}
    for key, values in rows.items():
        out[key] = [
            agg.fold([None] * len(values) if call.argument is None else values)
            for agg, call in zip(aggs, spec.aggregates, strict=True)
        ]
    return out


def test_finalize_rows_have_window_columns_and_outputs_by_name() -> None:
    spec = paper_spec()
    rows = finalize_window(spec, 60_000, groups_for(spec, {("1.2.3.4", "tcp"): [10, 20]}))
    assert rows == [
        {
            "window_start": 60_000,
            "window_end": 120_000,
            "window_start_iso": "1970-01-01T00:01:00.000Z",
            "window_end_iso": "1970-01-01T00:02:00.000Z",
            "sip": "1.2.3.4",
            "type": "tcp",
            "n": 2,
            "total": 30,
            "mean": 15.0,
            "double_n": 4,
        }
    ]


def test_having_filters_groups() -> None:
    spec = paper_spec("HAVING count(*) > 1")
    groups = groups_for(spec, {("a", "x"): [1, 2], ("b", "x"): [5], ("c", "y"): [None, None]})  # type: ignore[list-item]
    rows = finalize_window(spec, 0, groups)
    assert sorted(r["sip"] for r in rows) == ["a", "c"]
    assert [r["total"] for r in rows if r["sip"] == "c"] == [None]


def test_session_rows_end_at_each_sessions_last_record() -> None:
    spec = parse_task(
        "SELECT sip, count(*) AS n, window_end - window_start AS span FROM S GROUP BY sip "
        "HAVING count(*) > 1 WINDOWING SESSION 30 s",
        task_id="s",
    )
    # [count, session end]: state_aggregates order
    rows = finalize_window(spec, 1_000, {("a",): [3, 21_000], ("b",): [2, 1_500], ("c",): [1, 1]})
    assert [(r["sip"], r["window_end"], r["span"], r["window_end_iso"]) for r in rows] == [
        ("a", 21_000, 20_000, "1970-01-01T00:00:21.000Z"),
        ("b", 1_500, 500, "1970-01-01T00:00:01.500Z"),
    ]


def test_top_k_is_deterministic_across_bucket_order() -> None:
    rows = [{"sip": s, "n": n} for s, n in [("a", 3), ("b", 5), ("c", 3), ("d", None), ("e", 1)]]
    top = TopK(order_by="n", descending=True, limit=3)
    expected = [{"sip": "b", "n": 5}, {"sip": "a", "n": 3}, {"sip": "c", "n": 3}]
    assert select_top_k(top, rows) == expected
    assert select_top_k(top, list(reversed(rows))) == expected
    ascending = TopK(order_by="n", descending=False, limit=2)
    assert select_top_k(ascending, rows) == [{"sip": "e", "n": 1}, {"sip": "a", "n": 3}]
    assert select_top_k(None, rows) == rows


def test_iso_utc() -> None:
    assert iso_utc(0) == "1970-01-01T00:00:00.000Z"
    assert iso_utc(-1) == "1969-12-31T23:59:59.999Z"
    assert iso_utc(1_714_564_800_123) == "2024-05-01T12:00:00.123Z"


def test_windows_finalized_together_give_each_windows_own_rows() -> None:
    # The reducer finalizes a step's closed windows in one frame: the same rows, in the same
    # order, as one window at a time, with HAVING and top-k per window.
    spec = result_spec(
        parse_task(
            "SELECT sip, count(*) AS n, sum(v) AS total FROM S GROUP BY sip "
            "HAVING count(*) > 1 ORDER BY n DESC LIMIT 2 WINDOWING 10 s",
            task_id="t",
        )
    )
    windows = [
        (0, groups_for(spec, {("a",): [1, 2, 3], ("b",): [4], ("c",): [5, 6], ("d",): [7, 8]})),
        (10_000, groups_for(spec, {("a",): [1], ("e",): [None, 2]})),  # type: ignore[list-item]
        (20_000, {}),
        (30_000, groups_for(spec, {("b",): [1, 1, 1, 1]})),
    ]
    together = windows_rows(spec, windows)
    one_by_one = [row for start, groups in windows for row in window_rows(spec, start, groups)]
    assert together == one_by_one
    assert [(r["window_start"], r["sip"]) for r in together] == [
        (0, "a"),
        (0, "c"),
        (10_000, "e"),
        (30_000, "b"),
    ]

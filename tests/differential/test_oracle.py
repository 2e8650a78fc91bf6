"""The differential oracle on hand-made cases, worked out from docs/semantics.md (no services)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from tests.differential.cases import AGGREGATES, Case, TaskShape, random_case
from tests.differential.compare import problems
from tests.differential.oracle import expected_of

COUNT = AGGREGATES[0]  # count(*) AS n


def case(shape: TaskShape, *partitions: list[dict[str, Any] | bytes]) -> Case:
    encoded = tuple(
        tuple(r if isinstance(r, bytes) else json.dumps(r).encode() for r in records)
        for records in partitions
    )
    return Case(seed=0, shape=shape, partitions=encoded)


def shape(**overrides: Any) -> TaskShape:
    fields: dict[str, Any] = {
        "keys": ("k1",),
        "aggregates": (COUNT,),
        "window": "tumbling",
        "size_ms": 10,
        "slide_ms": 10,
        "grace_ms": 0,
        "unit": "ms",
    }
    return TaskShape(**(fields | overrides))


def test_equal_timestamps_are_on_time_in_sessions() -> None:
    records = [{"ts": t, "k1": "a"} for t in (10, 10, 10, 20, 20, 14, 13)]
    expected = expected_of(case(shape(window="session", size_ms=5), records))
    # 14 is 6 behind stream time 20 (grace 0): late; so is 13.
    assert expected.late == 2
    assert expected.rows == {
        (10, "a"): {"n": 3, "window_end": 10},
        (20, "a"): {"n": 2, "window_end": 20},
    }


def test_a_filtered_record_moves_stream_time_and_a_bad_one_does_not() -> None:
    records: list[dict[str, Any] | bytes] = [
        {"ts": 3, "k1": "a", "v": 1},
        {"ts": 100, "k1": "a", "v": -1},  # filtered, yet stream time is 100 after it
        {"ts": 5, "k1": "a", "v": 1},  # late
        b"not json",
        {"k1": "a", "v": 1},  # kept without an event time: bad
        {"k1": "a", "v": -1},  # filtered: needs none
    ]
    expected = expected_of(case(shape(where="v > 0"), records))
    assert (expected.late, expected.bad, expected.filtered) == (1, 2, 2)
    assert expected.rows == {(0, "a"): {"n": 1}}


def test_partitions_keep_their_own_stream_time() -> None:
    expected = expected_of(
        case(shape(), [{"ts": 100, "k1": "a"}], [{"ts": 5, "k1": "a"}, {"ts": 4, "k1": None}])
    )
    assert expected.late == 0
    assert expected.rows == {(100, "a"): {"n": 1}, (0, "a"): {"n": 1}, (0, None): {"n": 1}}


def test_hopping_counts_only_windows_still_open() -> None:
    # size 4, slide 1, grace 2: at stream time 8, ts 5's windows starting 3..5 are open.
    records = [{"ts": 8, "k1": "a"}, {"ts": 5, "k1": "a"}]
    expected = expected_of(
        case(shape(window="hopping", size_ms=4, slide_ms=1, grace_ms=2), records)
    )
    counts = {key[0]: row["n"] for key, row in expected.rows.items()}
    assert counts == {3: 1, 4: 1, 5: 2, 6: 1, 7: 1, 8: 1}


def test_having_filters_groups() -> None:
    records = [{"ts": 1, "k1": "a"}, {"ts": 2, "k1": "a"}, {"ts": 3, "k1": "b"}]
    expected = expected_of(case(shape(having="n > 1"), records))
    assert expected.rows == {(0, "a"): {"n": 2}}


def test_random_cases_render_sql_and_an_answer() -> None:
    for seed in range(40):
        drawn = random_case(seed)
        assert "WINDOWING" in drawn.shape.mars_sql("S")
        expected = expected_of(drawn)
        assert expected.records == drawn.records >= expected.bad + expected.late


def test_spread_aggregates_ignore_nulls_and_samp_is_null_for_one_value() -> None:
    spreads = tuple(a for a in AGGREGATES if a.alias in {"vpv", "vrv", "ssv", "spf", "sdf"})
    records = [
        {"ts": 1, "k1": "a", "v": 2, "f": 1.0},
        {"ts": 2, "k1": "a", "v": None, "f": 3.0},
        {"ts": 3, "k1": "a", "v": 4},
        {"ts": 4, "k1": "b", "v": 5, "f": 0.5},
        {"ts": 5, "k1": "c"},
    ]
    expected = expected_of(case(shape(aggregates=spreads), records))
    assert expected.rows == {
        (0, "a"): {"vpv": 1.0, "vrv": 2.0, "ssv": 2**0.5, "spf": 1.0, "sdf": 2**0.5},
        (0, "b"): {"vpv": 0.0, "vrv": None, "ssv": None, "spf": 0.0, "sdf": None},
        (0, "c"): {"vpv": None, "vrv": None, "ssv": None, "spf": None, "sdf": None},
    }


def test_a_spread_result_is_compared_within_its_relative_tolerance() -> None:
    spread = next(a for a in AGGREGATES if a.alias == "vpv")
    drawn = case(shape(aggregates=(spread,)), [{"ts": 1, "k1": "a", "v": 2}])
    expected = replace(expected_of(drawn), rows={(0, "a"): {"vpv": 1000.0}})
    stats = {"records_in": 1}

    def row(value: float | None) -> dict[str, Any]:
        return {"window_start": 0, "k1": "a", "vpv": value}

    assert problems(drawn, expected, [row(1000.0 * (1 + 5e-8))], stats) == []
    assert problems(drawn, expected, [row(1000.0 * (1 + 5e-6))], stats) != []
    assert problems(drawn, expected, [row(None)], stats) != []


def test_paths_read_nested_values_and_a_wrong_kind_is_bad_only_where_read() -> None:
    by_id = shape(keys=("m.u.id",), where="m.w IS NOT NULL")
    records: list[dict[str, Any] | bytes] = [
        {"ts": 1, "m": {"u": {"id": 3}, "w": 1}},
        {"ts": 2, "m": {"u": {"id": 3}, "w": 2, "tags": "not an array"}},  # tags unread
        {"ts": 3, "m": {"u": None, "w": 1}},  # NULL key
        {"ts": 4, "m": {"u": 7, "w": 1}},  # bad: 'm.u' is not an object
        {"ts": 5, "m": None},  # filtered (m.w is NULL)
        {"ts": 6, "m": {"u": {"id": {"x": 1}}, "w": 1}},  # bad: an object where a scalar is
    ]
    expected = expected_of(case(by_id, records))
    assert (expected.bad, expected.filtered) == (2, 1)
    assert expected.rows == {(0, 3): {"n": 2}, (0, None): {"n": 1}}
    by_tag = shape(keys=("m.tags[0]",))
    expected = expected_of(case(by_tag, records))
    assert expected.bad == 1  # only the record whose tags is not an array
    assert expected.rows == {(0, None): {"n": 5}}

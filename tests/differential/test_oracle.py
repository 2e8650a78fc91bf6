"""The differential oracle on hand-made cases, worked out from docs/semantics.md (no services)."""

from __future__ import annotations

import json
from typing import Any

from tests.differential.cases import AGGREGATES, Case, TaskShape, random_case
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

"""The differential oracle on hand-made cases, worked out from docs/semantics.md (no services)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from devtools.gen.binary_encoding import CORRUPT_PAYLOAD
from tests.differential import binary_records
from tests.differential.cases import AGGREGATES, Case, TaskShape, key_group, random_case
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


def test_cumulate_counts_a_record_in_its_windows_still_open() -> None:
    # size 40, step 10, grace 5: ts 12 at stream time 27 misses [0, 20) (20 + 5 <= 27), counts
    # in [0, 30) and [0, 40); the group "a" of ts 3 is in every window of the max window.
    records = [{"ts": 3, "k1": "a"}, {"ts": 27, "k1": "b"}, {"ts": 12, "k1": "b"}]
    expected = expected_of(
        case(shape(window="cumulate", size_ms=40, slide_ms=10, grace_ms=5), records)
    )
    counts = {key: row["n"] for key, row in expected.rows.items()}
    assert counts == {
        (0, 10, "a"): 1,
        (0, 20, "a"): 1,
        (0, 30, "a"): 1,
        (0, 40, "a"): 1,
        (0, 30, "b"): 2,
        (0, 40, "b"): 2,
    }
    late = expected_of(
        case(
            shape(window="cumulate", size_ms=40, slide_ms=10),
            [records[1], {"ts": 39, "k1": "b"}, {"ts": 0, "k1": "b"}],
        )
    )
    assert late.late == 0
    late = expected_of(
        case(
            shape(window="cumulate", size_ms=40, slide_ms=10),
            [{"ts": 40, "k1": "b"}, {"ts": 0, "k1": "b"}],
        )
    )
    assert late.late == 1


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


def test_first_and_last_take_the_extreme_value_among_ties_and_skip_nulls() -> None:
    names = {"fv", "lv", "fk1", "lfv", "cia", "cfv"}
    picked = tuple(a for a in AGGREGATES if a.alias in names)
    records = [
        {"ts": 3, "k1": "a", "v": 7, "k2": 1},
        {"ts": 1, "k1": "a", "v": None, "k2": 1},  # earliest, but NULL: skipped
        {"ts": 3, "k1": "a", "v": 2, "k2": 0},  # ties with 7 at the earliest valued time
        {"ts": 6, "k1": "a", "v": 12, "k2": 1},
        {"ts": 6, "k1": "a", "v": 30, "k2": 2},  # ties with 12 at the latest time
        {"ts": 5, "k1": "b", "v": 11},
    ]
    expected = expected_of(case(shape(aggregates=picked), records))
    assert expected.rows == {
        (0, "a"): {"fv": 2, "lv": 30, "fk1": "a", "lfv": 12, "cia": 5, "cfv": 2},
        (0, "b"): {"fv": 11, "lv": 11, "fk1": "b", "lfv": None, "cia": 0, "cfv": 1},
    }


def test_count_if_of_only_null_conditions_is_zero() -> None:
    counted = tuple(a for a in AGGREGATES if a.alias == "cfv")
    records = [{"ts": 1, "k1": "a", "v": None}, {"ts": 2, "k1": "a"}]
    assert expected_of(case(shape(aggregates=counted), records)).rows == {(0, "a"): {"cfv": 0}}


def sketches() -> tuple[Any, ...]:
    return tuple(a for a in AGGREGATES if a.fractions or a.top)


def test_sketch_oracles_give_exact_percentiles_values_and_histograms() -> None:
    records = [
        {"ts": 1, "k1": "a", "k2": 1, "v": 5, "f": 0.5},
        {"ts": 2, "k1": "a", "k2": 1, "v": None, "f": 0.25},
        {"ts": 3, "k1": "a", "k2": 2, "v": 1, "f": 1.0},
        {"ts": 4, "k1": "a", "k2": None, "v": 3},
        {"ts": 5, "k1": "b"},
    ]
    expected = expected_of(case(shape(aggregates=sketches()), records))
    a, b = expected.rows[(0, "a")], expected.rows[(0, "b")]
    assert (a["p50v"], a["p9f"], a["qsv"]) == (3, 1.0, [1, 1, 5])  # fractions 0, 0.25, 0.99
    assert (a["p50v__values"], a["p9f__values"]) == ([1, 3, 5], [0.25, 0.5, 1.0])
    assert (a["tk1"], a["tk2"]) == ({"a": 4}, {1: 2, 2: 1})
    assert b["p50v"] is b["qsv"] is b["p50v__values"] is b["tk2"] is None


def test_sketches_are_compared_exactly_up_to_200_values_and_by_rank_beyond() -> None:
    chosen = tuple(a for a in sketches() if a.alias in {"p50v", "qsv", "tk1"})
    small = [{"ts": 1, "k1": k, "v": v} for k, v in [("x", 1), ("y", 2), ("y", 3), ("x", 4)]]
    drawn = case(shape(keys=(), aggregates=chosen), small)
    expected = expected_of(drawn)
    stats = {"records_in": 4}

    def row(median: Any, quantiles: Any, top: Any) -> dict[str, Any]:
        return {"window_start": 0, "p50v": median, "qsv": quantiles, "tk1": top}

    assert problems(drawn, expected, [row(2.0, [1.0, 1.0, 4.0], ["x", "y"])], stats) == []
    assert problems(drawn, expected, [row(3.0, [1.0, 1.0, 4.0], ["x", "y"])], stats) != []
    assert problems(drawn, expected, [row(2.0, [1.0, 2.0, 4.0], ["x", "y"])], stats) != []
    assert problems(drawn, expected, [row(2.0, [1.0, 1.0, 4.0], ["y", "x"])], stats) != []
    assert problems(drawn, expected, [row(None, [1.0, 1.0, 4.0], ["x", "y"])], stats) != []

    large = [{"ts": 1, "v": v} for v in range(1000)]  # median 499; 1.33 % is 13 ranks
    drawn = case(shape(keys=(), aggregates=chosen[:1]), large)
    expected = expected_of(drawn)
    stats = {"records_in": 1000}
    for median, ok in [(499.0, True), (511.0, True), (487.0, True), (520.0, False)]:
        found = problems(drawn, expected, [{"window_start": 0, "p50v": median}], stats)
        assert (found == []) is ok, (median, found)


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


def test_a_record_protobuf_cannot_carry_is_bad_even_where_where_drops_it() -> None:
    """A string time has no form in Protobuf's int64 `ts`: the topic gets corrupt bytes, bad
    before WHERE is read, so the case's copy is not JSON for the oracle either."""
    drawn: list[dict[str, Any] | bytes] = [
        {"ts": "yesterday", "k1": "a", "v": -1},
        {"ts": 1, "k1": "a", "v": 1},
    ]
    base = case(shape(where="v > 0"), drawn)
    as_json = expected_of(base)
    carried = tuple(
        tuple(binary_records.carried(v, "protobuf", "ms", ()) for v in values)
        for values in base.partitions
    )
    as_protobuf = expected_of(replace(base, partitions=carried, input_format="protobuf"))
    assert (as_json.bad, as_json.filtered) == (0, 1)
    assert (as_protobuf.bad, as_protobuf.filtered) == (1, 0)
    assert binary_records.encode(carried[0][0], "protobuf", "ms") == CORRUPT_PAYLOAD


def test_key_watermark_judges_a_record_by_its_own_key_clock() -> None:
    records: list[dict[str, Any] | bytes] = [
        {"ts": 100, "k1": "fast"},
        {"ts": 40, "k1": "slow"},  # on time: slow's first record
        {"ts": 45, "k1": "slow"},
        {"ts": 62, "k1": "slow"},
        {"ts": 51, "k1": "slow"},  # late: [50, 60) closed at slow's clock 62
        {"ts": 30, "k1": "slow"},  # late: 30's window ends at 40 <= 100 - key_lag 60
    ]
    partition = expected_of(case(shape(), records))
    assert partition.late == 5
    keyed = expected_of(case(shape(key_lag_ms=60), records))
    assert keyed.late == 2
    assert keyed.rows == {
        (100, "fast"): {"n": 1},
        (40, "slow"): {"n": 2},
        (60, "slow"): {"n": 1},
    }
    assert expected_of(case(shape(key_lag_ms=0), records)) == partition


def test_key_groups_judge_a_record_by_its_groups_clock() -> None:
    records: list[dict[str, Any] | bytes] = [
        {"ts": 100, "k1": "fast"},
        {"ts": 40, "k1": "slow"},
        {"ts": 45, "k1": "slow"},
    ]
    one_group = expected_of(case(shape(key_lag_ms=60, key_groups=1), records))
    assert one_group.late == 2  # slow shares fast's clock 100: [40, 50) closed
    assert one_group == expected_of(case(shape(), records))  # the partition rule, no WHERE
    apart = next(n for n in range(2, 50) if key_group(["fast"], n) != key_group(["slow"], n))
    assert expected_of(case(shape(key_lag_ms=60, key_groups=apart), records)).late == 0


def test_key_watermark_sessions_are_late_only_behind_their_own_key_clock() -> None:
    records: list[dict[str, Any] | bytes] = [
        {"ts": 100, "k1": "fast"},
        {"ts": 40, "k1": "slow"},  # on time: slow's first record
        {"ts": 44, "k1": "slow"},  # joins [40, 44]
        {"ts": 70, "k1": "slow"},  # a session of its own (gap 5)
        {"ts": 66, "k1": "slow"},  # on time: 66 + grace 4 >= slow's clock 70; joins [66, 70]
        {"ts": 50, "k1": "slow"},  # late: 50 + 4 < 70 (its session may be closed)
        {"ts": 30, "k1": "slow"},  # late against the stream time: 30 + 4 < 100 - key_lag 60
    ]
    sessions = shape(window="session", size_ms=5, grace_ms=4)
    assert expected_of(case(sessions, records)).late == 6
    keyed = expected_of(case(replace(sessions, key_lag_ms=60), records))
    assert keyed.late == 2
    assert keyed.rows == {
        (100, "fast"): {"n": 1, "window_end": 100},
        (40, "slow"): {"n": 2, "window_end": 44},
        (66, "slow"): {"n": 2, "window_end": 70},
    }


def test_key_watermark_cases_have_each_key_in_one_partition() -> None:
    drawn = [c for c in map(random_case, range(200)) if c.shape.key_lag_ms is not None]
    assert len(drawn) >= 15
    assert any(c.shape.window == "session" for c in drawn)
    assert any(c.shape.emit_changes for c in drawn)
    assert any(c.shape.key_groups is not None for c in drawn)
    for c in drawn:
        assert c.shape.window in ("tumbling", "hopping", "session") and c.shape.top_k is None
        assert "watermark = 'key'" in c.task_sql("S")
        homes: dict[str, int] = {}
        for p, values in enumerate(c.partitions):
            for value in values:
                try:
                    record = json.loads(value)
                except ValueError:
                    continue
                if isinstance(record, dict):
                    key = json.dumps([record.get(k) for k in c.shape.keys if "." not in k])
                    if all("." not in k for k in c.shape.keys):
                        assert homes.setdefault(key, p) == p, c.seed

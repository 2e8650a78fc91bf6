from __future__ import annotations

import json

from engine_helpers import json_records, make_spec, run_in_batches

from mars.engine.preaggregate import preaggregate
from mars.engine.records import SourceRecord
from mars.tasks.spec import AggFunc


def test_design_example_only_the_last_zero_is_late() -> None:
    # The worked example of docs/semantics.md ("Lateness per window kind"): tumbling 2 ms,
    # grace 1 ms, event times 0,1,2,1,0,5,0 in one partition.
    spec = make_spec(size_ms=2, grace_ms=1)
    records = json_records([{"ts": t, "k": "a"} for t in [0, 1, 2, 1, 0, 5, 0]])
    partials = preaggregate(spec, records, {}, 0)
    assert [r.offset for r in partials.late] == [6]
    assert "late" in partials.late[0].reason
    assert partials.accepted == 6 and partials.bad == []
    assert partials.stream_times == {0: 5}
    assert partials.last_offsets == {0: 6}
    windows, *_ = run_in_batches(spec, records, [100])
    assert windows == {0: {("a",): [4]}, 2: {("a",): [1]}, 4: {("a",): [1]}}


def test_design_example_gives_the_same_outcome_one_record_per_batch() -> None:
    spec = make_spec(size_ms=2, grace_ms=1)
    records = json_records([{"ts": t, "k": "a"} for t in [0, 1, 2, 1, 0, 5, 0]])
    windows, late, _, stream_times = run_in_batches(spec, records, [1])
    assert [r.offset for r in late] == [6]
    assert windows == {0: {("a",): [4]}, 2: {("a",): [1]}, 4: {("a",): [1]}}
    assert stream_times == {0: 5}


def test_stream_time_from_before_the_batch_makes_records_late() -> None:
    spec = make_spec(size_ms=10)
    records = json_records([{"ts": 5, "k": "a"}, {"ts": 25, "k": "a"}])
    partials = preaggregate(spec, records, {0: 20}, 0)
    assert [r.offset for r in partials.late] == [0]
    assert partials.stream_times == {0: 25}


def test_partitions_keep_their_own_stream_time() -> None:
    spec = make_spec(size_ms=10)
    records = [
        SourceRecord(partition=0, offset=0, value=json.dumps({"ts": 100, "k": "a"}).encode()),
        SourceRecord(partition=1, offset=0, value=json.dumps({"ts": 5, "k": "a"}).encode()),
        SourceRecord(partition=0, offset=1, value=json.dumps({"ts": 5, "k": "a"}).encode()),
    ]
    partials = preaggregate(spec, records, {1: None}, 0)
    assert [(r.partition, r.offset) for r in partials.late] == [(0, 1)]
    assert partials.stream_times == {0: 100, 1: 5}


def test_hopping_record_is_late_only_when_all_its_windows_are_closed() -> None:
    # size 10, slide 5: ts 7 is in [0, 10) and [5, 15). Stream time 12 closes only [0, 10).
    spec = make_spec(size_ms=10, slide_ms=5, aggregates=[(AggFunc.COUNT, None, "n")])
    records = json_records([{"ts": 12, "k": "a"}, {"ts": 7, "k": "a"}, {"ts": 16, "k": "a"}])
    windows, late, _, _ = run_in_batches(spec, records, [3])
    assert late == []
    # ts 12 -> [5,15), [10,20); ts 7 -> only [5,15) (its [0,10) closed); ts 16 -> [10,20),[15,25)
    assert windows == {5: {("a",): [2]}, 10: {("a",): [2]}, 15: {("a",): [1]}}
    records = json_records([{"ts": 30, "k": "a"}, {"ts": 7, "k": "a"}])
    _, late, _, _ = run_in_batches(spec, records, [2])
    assert [r.offset for r in late] == [1]


def test_where_filtered_records_advance_stream_time() -> None:
    # Flink's rule: event time comes from every record the source reads, so a record WHERE
    # drops moves stream time (and can make a later kept record late), in partition order.
    spec = make_spec(size_ms=10, where="keep = 1")
    records = json_records(
        [
            {"ts": 3, "k": "a", "keep": 1},
            {"ts": 100, "k": "a", "keep": 0},
            {"ts": 5, "k": "a", "keep": 1},
        ]
    )
    partials = preaggregate(spec, records, {}, 0)
    assert [r.offset for r in partials.late] == [2]
    assert partials.filtered == 1 and partials.accepted == 2
    assert partials.stream_times == {0: 100}
    for sizes in ([1], [2], [3]):  # the same wherever the batches are cut
        windows, late, _, stream_times = run_in_batches(spec, records, sizes)
        assert [r.offset for r in late] == [2] and stream_times == {0: 100}
        assert windows == {0: {("a",): [1]}}


def test_a_batch_whose_records_where_drops_all_still_advances_stream_time() -> None:
    spec = make_spec(size_ms=10, where="keep = 1")
    records = json_records([{"ts": 86_400_000, "k": "a", "keep": 0}])
    partials = preaggregate(spec, records, {0: 5}, 0)
    assert partials.datasets == {} and partials.filtered == 1
    assert partials.stream_times == {0: 86_400_000}


def test_a_filtered_record_needs_no_event_time_and_a_kept_one_does() -> None:
    spec = make_spec(size_ms=10, where="keep = 1")
    records = json_records(
        [{"k": "a", "keep": 0}, {"k": "a", "keep": 1}, {"ts": 7, "k": "a", "keep": 1}]
    )
    partials = preaggregate(spec, records, {}, 0)
    assert [r.offset for r in partials.bad] == [1] and "missing" in partials.bad[0].reason
    assert partials.filtered == 1 and partials.stream_times == {0: 7}


def test_a_bad_record_does_not_advance_stream_time() -> None:
    # A dead-lettered record has no effect but its counter, whichever step rejected it: the
    # decoder (SUM of a string field) or a later one (SUM of a computed string).
    for argument, value in (("v", "x"), ("lower(k)", None)):
        spec = make_spec(size_ms=10, aggregates=[(AggFunc.SUM, argument, "total")])
        records = json_records([{"ts": 50, "k": "a", "v": value}, {"ts": 5, "k": "a", "v": 1}])
        if value is None:
            records = json_records([{"ts": 50, "k": "A"}, {"ts": 5, "k": None}])
        partials = preaggregate(spec, records, {}, 0)
        assert [r.offset for r in partials.bad] == [0] and partials.late == [], argument
        assert partials.stream_times == {0: 5}


def test_equal_timestamps_are_on_time_in_every_window_kind() -> None:
    records = json_records([{"ts": t, "k": "a"} for t in [10, 10, 10, 20, 20, 9]])
    for spec in (
        make_spec(size_ms=10),
        make_spec(size_ms=10, slide_ms=5),
        make_spec(size_ms=5, session=True),
    ):
        for sizes in ([1], [6]):
            _, late, _, stream_times = run_in_batches(spec, records, sizes)
            assert [r.offset for r in late] == [5], (spec.window, sizes)
            assert stream_times == {0: 20}


def test_hopping_contributions_skip_only_windows_closed_with_grace() -> None:
    # size 4, slide 1, grace 2; ts 5 lies in windows starting 2..5. At stream time 8 only the
    # window [2, 6) is closed (6 + 2 <= 8); [3, 7) is still within its grace (7 + 2 > 8).
    spec = make_spec(size_ms=4, slide_ms=1, grace_ms=2)
    records = json_records([{"ts": 8, "k": "a"}, {"ts": 5, "k": "a"}])
    windows, late, _, _ = run_in_batches(spec, records, [2])
    assert late == []
    assert {start: groups[("a",)][0] for start, groups in windows.items()} == {
        3: 1,
        4: 1,
        5: 2,
        6: 1,
        7: 1,
        8: 1,
    }

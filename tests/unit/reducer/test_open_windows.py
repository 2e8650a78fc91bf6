"""Pure tests of the open-window state and the progress record."""

from __future__ import annotations

import pytest

from mars.aggregates import CountAll, Sum
from mars.engine.dataset import DataSet
from mars.windows import WindowAssigner
from reducer.open_windows import DataSetOrderError, OpenWindowState
from reducer.progress_record import ProgressFormatError, ProgressRecord

AGGS = (CountAll(), Sum())


def dataset(windows: dict[int, dict[tuple[str, ...], list[int]]]) -> DataSet:
    return DataSet(aggregates=AGGS, windows={s: dict(g) for s, g in windows.items()})


def state(**kwargs: object) -> OpenWindowState:
    return OpenWindowState.starting(
        assigner=WindowAssigner(size_ms=10, slide_ms=10, grace_ms=5),
        aggregates=AGGS,
        rseqs={0: 1},
        **kwargs,  # type: ignore[arg-type]
    )


def test_rseq_is_the_first_data_set_of_the_oldest_open_window() -> None:
    s = state()
    s.merge(0, 1, dataset({0: {("a",): [1, 2]}}))
    s.merge(0, 2, dataset({10: {("a",): [1, 3]}}))
    s.merge(0, 3, dataset({0: {("a",): [2, 4]}, 10: {("b",): [1, 1]}}))
    assert s.rseq(0) == 1
    closed = s.close(15)
    assert [(w.start, w.groups) for w in closed] == [(0, {("a",): [3, 6]})]
    assert s.rseq(0) == 2
    s.close(25)
    assert s.rseq(0) == 4 and s.windows == {}


def test_watermark_never_moves_back_and_closed_windows_take_late_contributions() -> None:
    s = state()
    s.merge(0, 1, dataset({0: {("a",): [1, 1]}}))
    s.close(20)
    assert s.close(3) == [] and s.closed_watermark == 20
    late = s.merge(0, 2, dataset({0: {("a",): [4, 9]}, 20: {("a",): [1, 1]}}))
    assert [(x.window_start, x.key, x.records) for x in late] == [(0, ("a",), 4)]
    assert list(s.windows) == [20]


def test_replayed_contributions_to_closed_windows_are_dropped_silently() -> None:
    s = state(replayed_through={0: 2}, closed_watermark=15)
    assert s.merge(0, 1, dataset({0: {("a",): [1, 1]}})) == []
    assert s.merge(0, 2, dataset({0: {("a",): [1, 1]}, 10: {("a",): [1, 1]}})) == []
    assert len(s.merge(0, 3, dataset({0: {("a",): [1, 1]}}))) == 1  # new after the commit
    assert s.windows == {10: {("a",): [1, 1]}}


def test_data_sets_must_arrive_in_seq_order() -> None:
    s = state()
    with pytest.raises(DataSetOrderError):
        s.merge(0, 2, dataset({}))


def test_progress_round_trip_and_bad_record() -> None:
    progress = ProgressRecord(
        closed_watermark=7, rseqs={0: 3, 1: 1}, merged={0: 5, 1: 0}, counters={"late_records": 2}
    )
    assert ProgressRecord.from_bytes(progress.to_bytes()) == progress
    assert ProgressRecord.from_bytes(progress.to_bytes()).covering([1, 2]).rseqs == {1: 1, 2: 1}
    with pytest.raises(ProgressFormatError):
        ProgressRecord.from_bytes(b"{}")


def test_changes_are_the_current_values_of_changed_groups_of_open_windows() -> None:
    s = state(track_changes=True)
    s.merge(0, 1, dataset({0: {("a",): [1, 2], ("b",): [1, 1]}}))
    s.merge(0, 2, dataset({0: {("a",): [1, 3]}, 10: {("c",): [1, 5]}}))
    changes = s.take_changes()
    assert [(w.start, w.groups) for w in changes] == [
        (0, {("a",): [2, 5], ("b",): [1, 1]}),
        (10, {("c",): [1, 5]}),
    ]
    assert not s.has_changes and s.take_changes() == []
    s.merge(0, 3, dataset({0: {("b",): [1, 1]}, 10: {("c",): [1, 1]}}))
    s.close(15)  # window 0 closes: its change goes with its final value, not as an update
    assert [(w.start, w.groups) for w in s.take_changes()] == [(10, {("c",): [2, 6]})]


def test_changes_are_not_tracked_unless_asked() -> None:
    s = state()
    s.merge(0, 1, dataset({0: {("a",): [1, 2]}}))
    assert not s.has_changes

"""FIRST / LAST in session windows: merging partial sessions keeps the value at the earliest /
latest event time of the whole session, whichever partial holds it and whatever the order."""

from __future__ import annotations

from typing import Any

from mars.aggregates import First, Last, Max
from mars.engine.dataset import DataSet
from mars.windows import SessionWindows
from reducer.open_sessions import OpenSessionState

AGGS = (First(), Last(), Max())  # `state_aggregates` order: the session's last time at the end
GAP, GRACE = 10, 5


def dataset(windows: dict[int, dict[tuple[str, ...], list[Any]]]) -> DataSet:
    """Partial sessions: first time -> key -> [first (t, v), last (t, v), last time]."""
    return DataSet(aggregates=AGGS, windows={s: dict(g) for s, g in windows.items()})


def sessions_after(*datasets: DataSet) -> dict[int, dict[tuple[str, ...], list[Any]]]:
    s = OpenSessionState.starting(
        sessions=SessionWindows(gap_ms=GAP, grace_ms=GRACE), aggregates=AGGS, rseqs={0: 1}
    )
    for seq, data in enumerate(datasets, start=1):
        s.merge(0, seq, data)
    return {start: dict(groups) for start, groups in s.windows.items()}


def test_a_bridging_partial_gives_the_merged_session_its_first_and_last_values() -> None:
    early = dataset({0: {("a",): [(0, 5), (3, 7), 3]}})
    late = dataset({25: {("a",): [(25, 1), (27, 9), 27]}})
    bridge = dataset({9: {("a",): [(9, 4), (16, 2), 16]}})
    want = {0: {("a",): [(0, 5), (27, 9), 27]}}
    assert sessions_after(early, late, bridge) == want
    assert sessions_after(bridge, late, early) == want


def test_ties_at_a_session_edge_are_broken_by_the_value_whatever_the_merge_order() -> None:
    one = dataset({0: {("a",): [(0, "m"), (8, "m"), 8]}})
    two = dataset({0: {("a",): [(0, "b"), (8, "z"), 8]}})
    want = {0: {("a",): [(0, "b"), (8, "z"), 8]}}
    assert sessions_after(one, two) == want == sessions_after(two, one)


def test_a_session_whose_values_are_all_null_keeps_null_states() -> None:
    quiet = dataset({0: {("a",): [None, None, 4]}})
    valued = dataset({6: {("a",): [(6, 3), (6, 3), 6]}})
    assert sessions_after(quiet, valued) == {0: {("a",): [(6, 3), (6, 3), 6]}}

"""Pure tests of the open sessions of a `watermark = 'key'` task: a key's session closes when
its own clock passes last + gap + grace, or the watermark less key_lag does; partials late
against their key clock; a checkpoint brings the clocks back and a recovery emits nothing
twice."""

from __future__ import annotations

from mars.aggregates import CountAll, Max
from mars.engine.dataset import DataSet, decode_dataset, encode_dataset
from mars.engine.key_groups import KEY_CLOCKS_START
from mars.windows import SessionWindows
from reducer.key_timers import KeyTimers
from reducer.open_key_sessions import OpenKeySessionState

AGGS = (CountAll(), Max())  # COUNT(*), then the session's last time (= the key's latest)
GAP, GRACE = 10, 5  # a session [f, l] closes at clock l + 16


def dataset(windows: dict[int, dict[tuple[str, ...], list[int]]]) -> DataSet:
    return DataSet(aggregates=AGGS, windows={s: dict(g) for s, g in windows.items()})


def state(lag_ms: int = 1_000, **kwargs: object) -> OpenKeySessionState:
    return OpenKeySessionState.starting_by_key(
        sessions=SessionWindows(gap_ms=GAP, grace_ms=GRACE),
        aggregates=AGGS,
        rseqs={0: 1},
        lag_ms=lag_ms,
        **kwargs,  # type: ignore[arg-type]
    )


def closed(s: OpenKeySessionState, watermark: int | None) -> list[tuple[int, tuple[str, ...]]]:
    return [(w.start, key) for w in s.close(watermark) for key in w.groups]


def test_a_session_closes_when_its_own_key_clock_passes_it() -> None:
    s = state()
    s.merge(0, 1, dataset({0: {("a",): [2, 4], ("b",): [1, 3]}}))
    assert closed(s, None) == []
    s.merge(0, 2, dataset({20: {("a",): [1, 20]}}))  # a's clock 20 = 4 + 16: closes [0, 4]
    assert closed(s, None) == [(0, ("a",))]
    assert s.checkpoint_now  # the commit must carry a checkpoint without it
    assert s.windows == {0: {("b",): [1, 3]}, 20: {("a",): [1, 20]}}
    assert closed(s, None) == []  # b's clock did not move: nothing to look at


def test_a_session_that_grew_waits_for_its_new_end() -> None:
    s = state()
    s.merge(0, 1, dataset({0: {("a",): [1, 0]}}))
    s.merge(0, 2, dataset({10: {("a",): [1, 10]}}))  # joins: [0, 10], closes at clock 26
    assert closed(s, None) == []
    assert s.windows == {0: {("a",): [2, 10]}}
    s.merge(0, 3, dataset({25: {("a",): [1, 25]}}))  # 25 - 10 > gap: a session of its own
    assert closed(s, None) == []
    s.merge(0, 4, dataset({26: {("a",): [1, 26]}}))  # joins [25, 26]; clock 26 closes [0, 10]
    assert closed(s, None) == [(0, ("a",))]
    assert s.windows == {25: {("a",): [2, 26]}}


def test_a_partial_behind_its_key_clock_by_more_than_grace_is_late() -> None:
    s = state()
    s.merge(0, 1, dataset({0: {("a",): [1, 30]}, 30: {("b",): [1, 30]}}))
    late = s.merge(0, 2, dataset({25: {("a",): [1, 25]}, 10: {("c",): [1, 10]}}))
    assert late == []  # a: 25 + 5 >= 30; c has no clock yet
    late = s.merge(0, 3, dataset({20: {("b",): [1, 20]}}))
    assert [(x.window_start, x.key) for x in late] == [(20, ("b",))]  # 20 + 5 < 30
    assert s.checkpoint_now


def test_a_silent_key_closes_on_the_watermark_less_key_lag() -> None:
    s = state(lag_ms=100)
    s.merge(0, 1, dataset({0: {("b",): [1, 4]}}))
    assert closed(s, 119) == []  # 119 - 100 < 4 + 16
    assert closed(s, 120) == [(0, ("b",))]
    assert s.closed_watermark == 20
    assert s.key_clocks == {}  # b's clock 4 no longer decides anything
    late = s.merge(0, 2, dataset({14: {("d",): [1, 14]}}))
    assert [(x.window_start, x.key) for x in late] == [(14, ("d",))]  # 14 + 5 < 20


def test_checkpoint_round_trip_keeps_the_clocks_and_emits_nothing_twice() -> None:
    s = state(lag_ms=100)
    s.merge(0, 1, dataset({0: {("a",): [1, 5]}, 3: {("b",): [1, 3]}}))
    s.merge(0, 2, dataset({40: {("a",): [1, 40]}}))
    assert closed(s, 110) == [(0, ("a",))]  # a's clock; the shifted watermark is 10
    windows = s.checkpoint_windows()
    assert windows[KEY_CLOCKS_START] == {("a",): [0, 40]}  # b's 3 <= 10 decides nothing
    data = decode_dataset(encode_dataset(AGGS, windows, canonical=False)).windows
    restored = state(lag_ms=100, checkpoint=data, closed_watermark=s.closed_watermark)
    assert restored.key_clocks == {("a",): 40, ("b",): 3}
    assert restored.windows == {3: {("b",): [1, 3]}, 40: {("a",): [1, 40]}}
    assert closed(restored, 110) == []
    assert closed(restored, 119) == [(3, ("b",))]


def test_a_session_that_closes_both_ways_in_a_step_closes_once() -> None:
    s = state(lag_ms=0)
    s.merge(0, 1, dataset({0: {("a",): [1, 0]}}))
    s.merge(0, 2, dataset({30: {("a",): [1, 30]}}))
    assert closed(s, 30) == [(0, ("a",))]


def test_key_timers_push_again_a_group_due_later() -> None:
    timers = KeyTimers()
    due = {(("a",), 0): 20}
    timers.push(("a",), 10, 0)
    timers.raise_clock(("a",), 15)
    assert timers.take_due(lambda key, start: due.get((key, start))) == []
    timers.raise_clock(("a",), 20)
    assert timers.take_due(lambda key, start: due.get((key, start))) == [(("a",), 0)]


def test_emit_changes_a_session_closed_by_its_key_leaves_the_changed_ones() -> None:
    s = state(track_changes=True)
    s.merge(0, 1, dataset({0: {("a",): [1, 0], ("b",): [1, 2]}}))
    s.merge(0, 2, dataset({20: {("a",): [1, 20]}}))
    assert closed(s, None) == [(0, ("a",))]
    changes = {(w.start, key): states for w in s.take_changes() for key, states in w.groups.items()}
    assert changes == {(0, ("b",)): [1, 2], (20, ("a",)): [1, 20]}

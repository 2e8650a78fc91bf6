"""Pure tests of the open windows of a `watermark = 'key'` task: groups close on their key's
clock (the last state of each partial), whole windows on the watermark less key_lag, and a
checkpoint brings the clocks back."""

from __future__ import annotations

from mars.aggregates import CountAll, Max
from mars.engine.dataset import DataSet, decode_dataset, encode_dataset
from mars.engine.key_groups import KEY_CLOCKS_START
from mars.windows import WindowAssigner
from reducer.open_key_windows import OpenKeyWindowState

AGGS = (CountAll(), Max())  # COUNT(*), then the key's latest time


def dataset(windows: dict[int, dict[tuple[str, ...], list[int]]]) -> DataSet:
    return DataSet(aggregates=AGGS, windows={s: dict(g) for s, g in windows.items()})


def state(lag_ms: int = 1_000, **kwargs: object) -> OpenKeyWindowState:
    return OpenKeyWindowState.starting_by_key(
        assigner=WindowAssigner(size_ms=10, slide_ms=10, grace_ms=5),
        aggregates=AGGS,
        rseqs={0: 1},
        lag_ms=lag_ms,
        **kwargs,  # type: ignore[arg-type]
    )


def closed(s: OpenKeyWindowState, watermark: int | None) -> list[tuple[int, tuple[str, ...]]]:
    return [(w.start, key) for w in s.close(watermark) for key in w.groups]


def test_a_group_closes_when_its_own_key_clock_passes_end_plus_grace() -> None:
    s = state()
    s.merge(0, 1, dataset({0: {("a",): [1, 3], ("b",): [1, 4]}}))
    assert closed(s, None) == []
    s.merge(0, 2, dataset({10: {("a",): [1, 15]}}))  # a's clock 15 = end 10 + grace 5
    assert closed(s, None) == [(0, ("a",))]
    assert s.checkpoint_now  # the commit must carry a checkpoint without it
    assert s.windows == {0: {("b",): [1, 4]}, 10: {("a",): [1, 15]}}


def test_a_silent_key_closes_on_the_watermark_less_key_lag() -> None:
    s = state(lag_ms=100)
    s.merge(0, 1, dataset({0: {("b",): [1, 4]}}))
    assert closed(s, 114) == []  # 114 - 100 < 15
    assert closed(s, 115) == [(0, ("b",))]
    assert s.closed_watermark == 15
    assert s.key_clocks == {}  # b's clock 4 no longer decides anything


def test_a_contribution_behind_its_key_clock_is_late_and_others_are_not() -> None:
    s = state()
    s.merge(0, 1, dataset({0: {("a",): [1, 3]}, 20: {("a",): [1, 25]}}))
    s.close(None)
    late = s.merge(0, 2, dataset({0: {("a",): [2, 8], ("b",): [1, 9]}}))
    assert [(x.window_start, x.key, x.records) for x in late] == [(0, ("a",), 2)]
    assert s.windows[0] == {("b",): [1, 9]}


def test_timers_touch_only_the_keys_whose_clock_moved() -> None:
    s = state()
    s.merge(0, 1, dataset({0: {(f"k{i}",): [1, 1] for i in range(100)}}))
    s.close(None)
    s.merge(0, 2, dataset({30: {("k7",): [1, 30]}}))
    assert s.timers._moved == {("k7",)}
    assert closed(s, None) == [(0, ("k7",))]
    assert len(s.windows[0]) == 99


def test_checkpoint_round_trip_keeps_the_key_clocks() -> None:
    s = state()
    s.merge(0, 1, dataset({0: {("a",): [1, 3]}, 20: {("a",): [1, 25]}}))
    s.close(None)
    saved = s.checkpoint_windows()
    assert KEY_CLOCKS_START in saved
    restored = state(checkpoint=decode_dataset(encode_dataset(AGGS, saved)).windows)
    assert restored.key_clocks == {("a",): 25}
    assert KEY_CLOCKS_START not in restored.windows
    assert list(restored.windows) == [20]
    # The restored clock judges as the original did: window 0 of 'a' is closed.
    late = restored.merge(0, 1, dataset({0: {("a",): [1, 4]}}))
    assert len(late) == 1


def test_emit_changes_a_group_closed_by_its_key_leaves_the_changed_groups() -> None:
    s = state(track_changes=True)
    s.merge(0, 1, dataset({0: {("a",): [1, 3], ("b",): [1, 4]}}))
    s.merge(0, 2, dataset({10: {("a",): [1, 15]}}))
    assert closed(s, None) == [(0, ("a",))]  # its final row goes with its result
    changes = {(w.start, key): states for w in s.take_changes() for key, states in w.groups.items()}
    assert changes == {(0, ("b",)): [1, 4], (10, ("a",)): [1, 15]}
    assert not s.has_changes


def test_with_key_groups_a_group_closes_on_its_key_groups_clock() -> None:
    s = state(key_groups=1)  # one clock: the largest time of any key
    s.merge(0, 1, dataset({0: {("a",): [1, 3], ("b",): [1, 4]}}))
    s.merge(0, 2, dataset({10: {("a",): [1, 15]}}))
    assert closed(s, None) == [(0, ("a",)), (0, ("b",))]  # b closes on a's time too
    assert s.key_clocks == {(0,): 15}
    restored = state(key_groups=1, checkpoint=s.checkpoint_windows())
    assert restored.key_clocks == {(0,): 15}

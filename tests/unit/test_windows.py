from __future__ import annotations

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mars.tasks.spec import WindowSpec
from mars.windows import SessionWindows, WindowAssigner


def test_tumbling_windows_are_half_open() -> None:
    w = WindowAssigner(size_ms=1000, slide_ms=1000)
    assert list(w.window_starts(0)) == [0]
    assert list(w.window_starts(999)) == [0]
    assert list(w.window_starts(1000)) == [1000]
    assert w.end(1000) == 2000


def test_negative_timestamps_floor_into_the_earlier_window() -> None:
    w = WindowAssigner(size_ms=1000, slide_ms=1000)
    assert list(w.window_starts(-1)) == [-1000]
    assert list(w.window_starts(-1000)) == [-1000]
    assert list(w.window_starts(-1001)) == [-2000]


def test_hopping_windows_cover_every_window_containing_the_timestamp() -> None:
    w = WindowAssigner(size_ms=10, slide_ms=5)
    assert list(w.window_starts(0)) == [-5, 0]
    assert list(w.window_starts(4)) == [-5, 0]
    assert list(w.window_starts(5)) == [0, 5]
    assert list(w.window_starts(-6)) == [-15, -10]


def test_hopping_with_size_not_a_multiple_of_slide() -> None:
    w = WindowAssigner(size_ms=7, slide_ms=3)
    assert list(w.window_starts(6)) == [0, 3, 6]
    assert list(w.window_starts(7)) == [3, 6]


@given(
    ts=st.integers(-(10**12), 10**12),
    slide=st.integers(1, 5000),
    extra=st.integers(0, 20000),
)
def test_window_starts_are_exactly_the_windows_containing_ts(
    ts: int, slide: int, extra: int
) -> None:
    w = WindowAssigner(size_ms=slide + extra, slide_ms=slide)
    starts = list(w.window_starts(ts))
    assert starts, "every timestamp belongs to at least one window"
    for start in starts:
        assert start % slide == 0
        assert start <= ts < w.end(start)
    # the neighbours just outside the range do not contain ts
    assert not (starts[0] - slide <= ts < w.end(starts[0] - slide))
    assert not (starts[-1] + slide <= ts)


@given(
    ts=st.lists(st.integers(-(10**12), 10**12), min_size=1, max_size=50),
    slide=st.integers(1, 5000),
    extra=st.integers(0, 9000),
)
def test_polars_assignment_matches_scalar(ts: list[int], slide: int, extra: int) -> None:
    w = WindowAssigner(size_ms=slide + extra, slide_ms=slide)
    frame = pl.DataFrame({"t": ts}, schema={"t": pl.Int64})
    got = frame.select(w.starts_expr(pl.col("t")).alias("s")).get_column("s").to_list()
    if w.tumbling:
        assert got == [w.last_start(t) for t in ts]
    else:
        assert got == [list(w.window_starts(t)) for t in ts]


def test_closed_when_watermark_reaches_end_plus_grace() -> None:
    w = WindowAssigner(size_ms=2, slide_ms=2, grace_ms=1)
    assert not w.is_closed(0, None)
    assert not w.is_closed(0, 2)
    assert w.is_closed(0, 3)
    assert w.is_late(0, 3)
    assert not w.is_late(1, 2)


def test_from_spec_and_validation() -> None:
    w = WindowAssigner.from_spec(WindowSpec(size_ms=60_000, slide_ms=10_000, grace_ms=5))
    assert (w.size_ms, w.slide_ms, w.grace_ms, w.tumbling) == (60_000, 10_000, 5, False)
    with pytest.raises(ValueError):
        WindowAssigner(size_ms=0, slide_ms=0)
    with pytest.raises(ValueError):
        WindowAssigner(size_ms=5, slide_ms=10)


@given(
    times=st.lists(st.integers(-10_000, 10_000), min_size=1, max_size=30),
    stream_time=st.integers(-10_000, 10_000),
    size=st.integers(1, 50),
    slide_div=st.integers(1, 5),
    grace=st.integers(0, 20),
)
def test_vectorised_lateness_is_the_scalar_rule(
    times: list[int], stream_time: int, size: int, slide_div: int, grace: int
) -> None:
    # The mapper decides lateness with `late_from_expr`; the reducer and docs with `is_late`.
    slide = max(1, size // slide_div)
    frame = pl.DataFrame({"t": times})
    for rule in (
        WindowAssigner(size_ms=size, slide_ms=slide, grace_ms=grace),
        SessionWindows(gap_ms=size, grace_ms=grace),
    ):
        late_from = frame.select(rule.late_from_expr(pl.col("t")))["t"].to_list()
        assert [lf <= stream_time for lf in late_from] == [
            rule.is_late(t, stream_time) for t in times
        ]

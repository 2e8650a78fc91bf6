"""Cumulative window arithmetic (`mars.windows.CumulativeWindows`) against brute force."""

from __future__ import annotations

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mars.tasks.spec import WindowSpec
from mars.windows import CumulativeWindows, window_closes_at, window_end


def brute_force_windows(size: int, step: int, ts: int) -> list[tuple[int, int]]:
    """Every (start, end) of every cumulative window containing `ts`, by enumeration: the max
    windows are the epoch-aligned multiples of `size` near `ts`."""
    found = []
    for start in range((ts // size - 2) * size, (ts // size + 3) * size, size):
        for n in range(1, size // step + 1):
            if start <= ts < start + n * step:
                found.append((start, start + n * step))
    return found


@given(
    step=st.integers(min_value=2, max_value=50),
    steps=st.integers(min_value=1, max_value=12),
    ts=st.integers(min_value=-2_000, max_value=2_000),
)
def test_window_ends_are_every_cumulative_window_containing_the_time(
    step: int, steps: int, ts: int
) -> None:
    windows = CumulativeWindows(size_ms=step * steps, step_ms=step)
    expected = brute_force_windows(step * steps, step, ts)
    assert {(windows.max_start(ts), end) for end in windows.window_ends(ts)} == set(expected)
    assert len(windows.window_ends(ts)) == len(expected)


@given(
    step=st.integers(min_value=2, max_value=50),
    steps=st.integers(min_value=1, max_value=12),
    grace=st.integers(min_value=0, max_value=100),
    ts=st.integers(min_value=-2_000, max_value=2_000),
    behind=st.one_of(st.none(), st.integers(min_value=-300, max_value=1_000)),
)
def test_a_record_counts_in_exactly_its_windows_still_open(
    step: int, steps: int, grace: int, ts: int, behind: int | None
) -> None:
    """The slice a record is counted in (`contribution_slice_expr`) gives it exactly the
    windows containing it whose `end + grace` is above the stream time before it; a record is
    late (`late_from`) exactly when it has none."""
    windows = CumulativeWindows(size_ms=step * steps, step_ms=step, grace_ms=grace)
    before = None if behind is None else ts + behind
    open_ends = [
        end
        for _, end in brute_force_windows(step * steps, step, ts)
        if before is None or end + grace > before
    ]
    assert windows.is_late(ts, before) == (not open_ends)
    frame = pl.DataFrame({"t": [ts], "b": [before]}, schema={"t": pl.Int64, "b": pl.Int64})
    late_from, slice_start = frame.select(
        windows.late_from_expr(pl.col("t")).alias("late_from"),
        windows.contribution_slice_expr(pl.col("t"), pl.col("b")).alias("slice"),
    ).row(0)
    assert late_from == windows.late_from(ts)
    if open_ends:  # counted in slice σ: the windows of its max window ending after σ
        start = windows.max_start(ts)
        counted = range(slice_start + step, start + step * steps + 1, step)
        assert start <= slice_start and list(counted) == open_ends


def test_a_day_by_minutes() -> None:
    windows = CumulativeWindows(size_ms=86_400_000, step_ms=60_000, grace_ms=5_000)
    noon = 12 * 3_600_000 + 30_000  # 12:00:30 on 1970-01-01
    ends = windows.window_ends(86_400_000 * 3 + noon)
    assert ends[0] == 86_400_000 * 3 + 12 * 3_600_000 + 60_000 and ends[-1] == 86_400_000 * 4
    assert len(ends) == 720
    assert windows.closes_at(ends[0]) == ends[0] + 5_000
    assert windows.is_running_key(windows.running_key(86_400_000 * 3))
    assert not windows.is_running_key(ends[0])


def test_the_window_end_of_a_cumulative_row_is_its_last_state() -> None:
    spec = WindowSpec(size_ms=100, slide_ms=10, grace_ms=3, cumulate=True)
    assert window_end(spec, 0, [5, 30]) == 30
    assert window_closes_at(spec, 0, [5, 30]) == 33
    assert not spec.tumbling


@pytest.mark.parametrize(
    ("size", "step", "grace"), [(100, 30, 0), (100, 1, 0), (0, 10, 0), (100, 10, -1)]
)
def test_invalid_cumulative_windows(size: int, step: int, grace: int) -> None:
    with pytest.raises(ValueError):
        CumulativeWindows(size_ms=size, step_ms=step, grace_ms=grace)

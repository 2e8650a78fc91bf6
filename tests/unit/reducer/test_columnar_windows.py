"""Property tests of the columnar open windows (`ColumnarWindowState`) against the reference,
the Python state (`OpenWindowState`): random data sets of random aggregates and keys merged
into both in the same order, with closes, rewinds and checkpoint round trips between them,
give the same open groups, closed windows, late contributions and rseqs. Values include what
does not fit
columns (mixed types, ints beyond int64, NaN), which must turn a window back to Python. The
same scenarios merged as encoded data sets (`merge_encoded`: frames decoded natively where
they fit) give what merging their decoded groups gives."""

from __future__ import annotations

import math
from typing import Any

import polars as pl
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from mars.aggregates import Aggregate, Average, CountAll, CountNonNull, Max, Min, Sum
from mars.engine.columnar_checkpoint import checkpoint_dataset, decode_columnar
from mars.engine.dataset import DataSet, OpenWindows, decode_dataset, encode_dataset
from mars.windows import WindowAssigner
from reducer.columnar_groups import ColumnarGroups, columnar_aggregates
from reducer.columnar_windows import ColumnarWindowState
from reducer.open_windows import ClosedWindow, LateContribution, OpenWindowState

ASSIGNER = WindowAssigner(size_ms=20, slide_ms=10, grace_ms=0)  # hopping: 2 windows a record
STARTS = (0, 10, 20, 30, 40)
KINDS = (CountAll, CountNonNull, Sum, Min, Max, Average)

# Mostly one type per column (what fits), sometimes mixed ones (what does not).
small_ints = st.integers(min_value=-1000, max_value=1000)
floats = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False)
odd_numbers = st.one_of(
    st.just(float("nan")), st.integers(min_value=-(2**70), max_value=2**70), small_ints, floats
)
scalars = st.one_of(small_ints, floats, st.text(max_size=4), st.booleans(), st.none())


@st.composite
def column_values(
    draw: st.DrawFn, base: st.SearchStrategy[Any], odd: st.SearchStrategy[Any]
) -> st.SearchStrategy[Any]:
    """A strategy for one column's values in one data set: usually `base` or None, now and
    then `odd` ones too."""
    if draw(st.integers(min_value=0, max_value=9)) == 0:
        return st.one_of(base, odd, st.none())
    return st.one_of(base, st.none()) if draw(st.booleans()) else base


@st.composite
def state_of(draw: st.DrawFn, agg: Aggregate[Any], numbers: st.SearchStrategy[Any]) -> Any:
    """A partial state as a mapper makes it: COUNT an int, AVG (sum, count) with sum 0 for
    no values, SUM a number or None, MIN / MAX any scalar or None."""
    if isinstance(agg, CountAll | CountNonNull):
        return draw(st.integers(min_value=0, max_value=50))
    if isinstance(agg, Average):
        count = draw(st.integers(min_value=0, max_value=5))
        return (draw(numbers.filter(lambda v: v is not None)) if count else 0, count)
    if isinstance(agg, Sum):
        return draw(numbers)
    return draw(st.one_of(numbers, scalars) if draw(st.integers(0, 9)) == 0 else numbers)


@st.composite
def scenario(draw: st.DrawFn) -> tuple[tuple[Aggregate[Any], ...], list[Any]]:
    aggregates = tuple(
        kind() for kind in draw(st.lists(st.sampled_from(KINDS), min_size=1, max_size=3))
    )
    width = draw(st.integers(min_value=0, max_value=2))
    key_bases = [draw(st.sampled_from([small_ints, st.text(max_size=3), st.booleans()]))]
    key_bases *= width
    numbers = draw(st.sampled_from([small_ints, floats]))
    steps: list[Any] = []
    for _ in range(draw(st.integers(min_value=1, max_value=12))):
        action = draw(st.sampled_from(["merge", "merge", "merge", "close", "checkpoint", "rewind"]))
        if action == "merge":
            bucket = draw(st.integers(min_value=0, max_value=1))
            keys = [draw(column_values(base, scalars)) for base in key_bases]
            value = draw(column_values(numbers, odd_numbers))
            windows: OpenWindows = {}
            for start in draw(st.lists(st.sampled_from(STARTS), max_size=2, unique=True)):
                rows = draw(st.integers(min_value=0, max_value=6))
                groups = windows.setdefault(start, {})
                for _ in range(rows):
                    key = tuple(draw(k) for k in keys)
                    groups[key] = [draw(state_of(agg, value)) for agg in aggregates]
            steps.append(("merge", bucket, windows))
        elif action == "close":
            steps.append(("close", draw(st.sampled_from([None, *STARTS]))))
        elif action == "rewind":
            steps.append(("rewind", draw(st.sampled_from(STARTS))))
        else:
            steps.append(("checkpoint",))
    return aggregates, steps


def same(left: Any, right: Any) -> bool:
    """Equal, floats within rounding (Polars sums floats in its own order), NaN equal to NaN;
    an int and a float only within AVG's (sum, count) (its result is a float either way)."""
    if isinstance(left, tuple | list) and isinstance(right, tuple | list):
        if len(left) != len(right):
            return False
        loose = isinstance(left, tuple) and isinstance(right, tuple)
        return all(same_number(a, b, loose) for a, b in zip(left, right, strict=True))
    return same_number(left, right, False)


def same_number(left: Any, right: Any, loose: bool) -> bool:
    if isinstance(left, list | tuple):
        return same(left, right)
    if isinstance(left, float) or isinstance(right, float):
        if not loose and type(left) is not type(right):
            return False
        if math.isnan(left) or math.isnan(right):
            return math.isnan(left) and math.isnan(right)
        return math.isclose(left, right, rel_tol=1e-9, abs_tol=1e-6)
    return type(left) is type(right) and bool(left == right)


def same_windows(left: OpenWindows, right: OpenWindows) -> bool:
    left = {start: groups for start, groups in left.items() if groups}
    right = {start: groups for start, groups in right.items() if groups}
    if left.keys() != right.keys():
        return False
    for start, groups in left.items():
        other = right[start]
        if groups.keys() != other.keys():
            return False
        if not all(same(groups[key], other[key]) for key in groups):
            return False
    return True


def closed_windows(
    closed: list[ClosedWindow], aggregates: tuple[Aggregate[Any], ...]
) -> OpenWindows:
    found = {window.start: window.all_groups(aggregates) for window in closed}
    for window in closed:
        window.release()  # a spilled window's file, as its commit does once it read it
    return found


def close_both(
    reference: OpenWindowState, other: OpenWindowState, at: int | None, aggregates: Any
) -> None:
    """Close both states at `at`: `other` must close what `reference` closes."""
    expected = closed_windows(reference.close(at), aggregates)
    assert same_windows(closed_windows(other.close(at), aggregates), expected)


def rewind_both(reference: OpenWindowState, other: OpenWindowState, start: int) -> None:
    """Rewind both states from window `start`, as the same next generation."""
    generation = reference.rewind_generation + 1
    reference.rewind(generation, start)
    other.rewind(generation, start)


def fresh(aggregates: tuple[Aggregate[Any], ...]) -> tuple[OpenWindowState, ColumnarWindowState]:
    rseqs = {0: 1, 1: 1}
    reference = OpenWindowState.starting(assigner=ASSIGNER, aggregates=aggregates, rseqs=rseqs)
    columnar = ColumnarWindowState.starting_columnar(
        assigner=ASSIGNER, aggregates=aggregates, rseqs=rseqs
    )
    return reference, columnar


def round_trip(state: ColumnarWindowState) -> ColumnarWindowState:
    """A new state from `state`'s checkpoint, as an owner recovering from it starts."""
    data = state.checkpoint_data()
    restarted = ColumnarWindowState.starting_columnar(
        assigner=ASSIGNER,
        aggregates=state.aggregates,
        rseqs={b: state.merged[b] + 1 for b in state.merged},
        closed_watermark=state.closed_watermark,
        checkpoint=decode_columnar(data),
        rewinds=state.rewinds,  # the commit's progress record carries them
    )
    assert same_windows(restarted.open_groups(), state.open_groups())
    return restarted


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenario())
def test_columnar_state_matches_the_python_state(case: Any) -> None:
    aggregates, steps = case
    reference, columnar = fresh(aggregates)
    for step in steps:
        if step[0] == "merge":
            _, bucket, windows = step
            seq = reference.merged[bucket] + 1
            # through the wire and back, as a reducer reads a data set
            dataset = decode_dataset(encode_dataset(aggregates, windows))
            late = reference.merge(bucket, seq, dataset)
            assert columnar.merge(bucket, seq, dataset) == late
        elif step[0] == "close":
            close_both(reference, columnar, step[1], aggregates)
        elif step[0] == "rewind":
            rewind_both(reference, columnar, step[1])
            assert columnar.rewinds == reference.rewinds
        else:
            data = columnar.checkpoint_data()
            # pull queries and a non-columnar owner read the same checkpoint as Python groups
            assert same_windows(checkpoint_dataset(data).windows, reference.windows)
            checkpointed = round_trip(columnar)
            columnar.checkpointed()
            reference.checkpointed()
            columnar = checkpointed
            columnar.checkpointed()
        assert same_windows(columnar.open_groups(), reference.windows)
        assert columnar.rseqs() == reference.rseqs()
        assert columnar.closed_watermark == reference.closed_watermark


def same_late(left: list[LateContribution], right: list[LateContribution]) -> bool:
    """Equal late contributions, their states by `same` (NaN equal to NaN)."""
    return len(left) == len(right) and all(
        (a.bucket, a.seq, a.window_start, a.records) == (b.bucket, b.seq, b.window_start, b.records)
        and same(a.key, b.key)
        and same(a.states, b.states)
        for a, b in zip(left, right, strict=True)
    )


def merged_encoded(
    state: ColumnarWindowState, bucket: int, seq: int, data: bytes
) -> tuple[list[LateContribution], int]:
    """As `UnitOwner._merge`: the frames when they fit, else the decoded data set."""
    merged = state.merge_encoded(bucket, seq, data)
    event("frames" if merged is not None else "declined: groups")
    if merged is not None:
        return merged
    dataset = decode_dataset(data)
    return state.merge(bucket, seq, dataset), sum(map(len, dataset.windows.values()))


def fallen_back(state: ColumnarWindowState) -> dict[int, bool]:
    return {start: w.python_groups() is not None for start, w in state.columns.items()}


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenario())
def test_merging_encoded_data_sets_matches_merging_their_groups(case: Any) -> None:
    aggregates, steps = case
    _, by_groups = fresh(aggregates)
    _, by_frames = fresh(aggregates)
    for step in steps:
        if step[0] == "merge":
            _, bucket, windows = step
            seq = by_groups.merged[bucket] + 1
            data = encode_dataset(aggregates, windows)
            dataset = decode_dataset(data)
            late = by_groups.merge(bucket, seq, dataset)
            found, groups = merged_encoded(by_frames, bucket, seq, data)
            assert same_late(found, late)
            assert groups == sum(map(len, dataset.windows.values()))
        elif step[0] == "close":
            close_both(by_groups, by_frames, step[1], aggregates)
        elif step[0] == "rewind":
            rewind_both(by_groups, by_frames, step[1])
        else:
            expected = checkpoint_dataset(by_groups.checkpoint_data()).windows
            assert same_windows(checkpoint_dataset(by_frames.checkpoint_data()).windows, expected)
            by_groups, by_frames = round_trip(by_groups), round_trip(by_frames)
        assert same_windows(by_frames.open_groups(), by_groups.open_groups())
        assert fallen_back(by_frames) == fallen_back(by_groups)
        assert by_frames.rseqs() == by_groups.rseqs()
        assert by_frames.merged == by_groups.merged


def test_frames_of_a_window_that_fell_back_merge_as_python_groups() -> None:
    """A window turned into Python groups takes a data set's groups, decoded for it: exact
    (an AVG sum of ints stays an int), and a type change makes it fall back at once."""
    aggregates = (Sum(), Average())
    _, state = fresh(aggregates)
    encoded = [
        encode_dataset(aggregates, {0: {("a",): [1, (1, 1)], ("b",): [2, (2**60, 1)]}}),
        encode_dataset(aggregates, {0: {("a",): [0.5, (1, 1)]}}),  # SUM: floats after ints
        encode_dataset(aggregates, {0: {("a",): [1.0, (1, 1)], ("b",): [1.0, (3, 2)]}}),
    ]
    for seq, data in enumerate(encoded, start=1):
        assert state.merge_encoded(0, seq, data) is not None
    assert state.columns[0].python_groups() == {
        ("a",): [2.5, (3, 3)],
        ("b",): [3.0, (2**60 + 3, 3)],
    }


def test_late_contributions_of_encoded_data_sets_are_their_groups() -> None:
    aggregates = (CountAll(), Min())
    _, state = fresh(aggregates)
    state.close(20)  # window 0 closed
    data = encode_dataset(aggregates, {0: {("a",): [3, 1.5]}, 10: {("b",): [1, "x"]}})
    late, groups = state.merge_encoded(1, 1, data) or ([], 0)
    assert groups == 2
    assert late == [
        LateContribution(bucket=1, seq=1, window_start=0, key=("a",), states=[3, 1.5], records=3)
    ]
    assert state.open_groups() == {10: {("b",): [1, "x"]}}


def test_data_sets_the_columns_cannot_take_are_declined_untouched() -> None:
    """Another revision's aggregates (a prefix: `fitted` pads them), or mixed kinds: None,
    and nothing merged."""
    aggregates = (CountAll(), Sum())
    _, state = fresh(aggregates)
    prefix = encode_dataset(aggregates[:1], {0: {("a",): [1]}})
    mixed = encode_dataset(aggregates, {0: {("a",): [1, 2], (1,): [1, 2]}})
    assert state.merge_encoded(0, 1, prefix) is None
    assert state.merge_encoded(0, 1, mixed) is None
    assert state.merged == {0: 0, 1: 0} and not state.columns


def test_large_windows_merge_in_columns_and_stay_exact() -> None:
    """Enough groups to compact several times: the window stays columnar and exact."""
    aggregates = (CountAll(), Sum(), Min(), Max(), Average())
    reference, columnar = fresh(aggregates)
    for seq in range(1, 9):
        groups = {
            (f"10.0.{i % 256}.{i // 256}",): [1, i * seq, i - seq, i + seq, (float(i), 1)]
            for i in range(seq * 7_000, seq * 7_000 + 70_000)
        }
        dataset = DataSet(aggregates=aggregates, windows={0: groups})
        reference.merge(0, seq, dataset)
        columnar.merge(0, seq, dataset)
    assert columnar.columns[0].frame() is not None  # not fallen back
    assert same_windows(columnar.open_groups(), reference.windows)
    expected = closed_windows(reference.close(100), aggregates)
    assert same_windows(closed_windows(columnar.close(100), aggregates), expected)


def test_a_type_change_turns_the_window_into_python_objects() -> None:
    """SUM of ints, then of floats: Python's sum is a float; the window falls back."""
    aggregates = (Sum(),)
    window = ColumnarGroups(aggregates)
    window.merge({("a",): [1], ("b",): [2]})
    window.merge({("a",): [0.5]})
    assert window.frame() is None
    assert window.groups() == {("a",): [1.5], ("b",): [2]}


def test_sums_that_may_leave_int64_turn_the_window_into_python_objects() -> None:
    """Two SUMs of 2**62 make 2**63, past int64: the compaction declines, Python's ints sum
    exactly. A column of small ints beside them does not hide the large one."""
    aggregates = (CountAll(), Sum())
    window = ColumnarGroups(aggregates)
    window.merge({("a",): [1, 2**62], ("b",): [1, 1]})
    window.merge({("a",): [1, 2**62]})
    assert window.frame() is None
    assert window.groups() == {("a",): [2, 2**63], ("b",): [1, 1]}


def test_only_fixed_width_aggregates_are_columnar() -> None:
    assert columnar_aggregates((CountAll(), Sum(), Min(), Max(), Average(), CountNonNull()))
    from mars.aggregates import CountDistinct

    assert not columnar_aggregates((CountAll(), CountDistinct()))


def test_checkpoint_frames_are_arrow() -> None:
    aggregates = (CountAll(), Sum())
    _, columnar = fresh(aggregates)
    columnar.merge(0, 1, DataSet(aggregates=aggregates, windows={0: {("x",): [2, 5]}}))
    found = decode_columnar(columnar.checkpoint_data())
    assert found.frames[0].to_dicts() == [{"k0": "x", "a0": 2, "a1": 5}]
    assert found.frames[0].schema == pl.Schema({"k0": pl.String, "a0": pl.Int64, "a1": pl.Int64})

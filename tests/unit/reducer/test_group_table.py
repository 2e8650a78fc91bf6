"""Property tests of the native group table (`mars_native.GroupTable`, through
`ColumnarGroups.merge_window`) against the reference, the Python state (`merge_groups`): random
data sets of random aggregates and keys, merged in the same order, give the same groups. While
the table holds a window its states are the reference's exactly (floats to the bit: it merges in
the same order, where a frame's sums may differ in the last bits), and the groups changed since
a checkpoint are those merged since; a data set it declines (a type change, a sum that may
leave int64) merges nothing into it, and the window goes on as frames, or as Python groups. A
checkpoint's frame loads back into a table with each key as a mapper encodes it."""

from __future__ import annotations

import math
import struct
from typing import Any

from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from mars.aggregates import Aggregate, Average, CountAll, CountNonNull, Max, Min, Sum
from mars.engine.columnar_layout import frame_groups
from mars.engine.dataset import Groups, decode_dataset, encode_dataset, merge_groups
from mars.engine.dataset_frames import dataset_windows
from mars.native import native_available
from reducer.columnar_groups import ColumnarGroups
from reducer.spilled_frames import SpillFolder


def test_the_extension_is_built() -> None:
    assert native_available(), "mars_native is not built: run `make setup`"


KINDS = (CountAll, CountNonNull, Sum, Min, Max, Average)
small_ints = st.integers(min_value=-1000, max_value=1000)
floats = st.floats(allow_nan=False, allow_infinity=False, width=64)
key_kinds = [
    small_ints,
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.sampled_from(  # each msgpack int width's bounds
        [
            *(0, 127, 128, 255, 256, 2**16 - 1, 2**16, 2**32 - 1, 2**32, 2**63 - 1),
            *(-1, -32, -33, -128, -129, -(2**15), -(2**15) - 1, -(2**31), -(2**31) - 1),
            -(2**63),
        ]
    ),
    st.text(max_size=3),
    st.text(min_size=30, max_size=34),  # fixstr and str8
    st.booleans(),
    floats.filter(lambda f: f != 0.0),  # (-0.0 and 0.0 are one key in Python, two as bytes)
]


@st.composite
def states_of(draw: st.DrawFn, agg: Aggregate[Any], numbers: st.SearchStrategy[Any]) -> Any:
    """A partial state as a mapper makes it."""
    if isinstance(agg, CountAll | CountNonNull):
        return draw(st.integers(min_value=0, max_value=50))
    if isinstance(agg, Average):
        count = draw(st.integers(min_value=0, max_value=5))
        return (draw(numbers) if count else 0, count)
    if isinstance(agg, Sum):
        return draw(st.one_of(numbers, st.none()))
    return draw(st.one_of(numbers, st.none()))


@st.composite
def scenario(draw: st.DrawFn) -> tuple[tuple[Aggregate[Any], ...], list[Groups | None]]:
    """Aggregates, and data sets of one window (None: a checkpoint between them). Keys come
    mostly from a pool of the scenario's, so that groups meet again across data sets and
    checkpoints. Keys and states mostly keep their types; now and then a data set changes
    one, or brings ints large enough that their sums may leave int64."""
    aggregates = tuple(
        kind() for kind in draw(st.lists(st.sampled_from(KINDS), min_size=1, max_size=3))
    )
    width = draw(st.integers(min_value=0, max_value=2))
    key_bases = [draw(st.sampled_from(key_kinds)) for _ in range(width)]
    numbers = draw(st.sampled_from([small_ints, floats]))
    pool = draw(st.lists(st.tuples(*key_bases), min_size=1, max_size=8))
    steps: list[Groups | None] = []
    for _ in range(draw(st.integers(min_value=1, max_value=8))):
        if draw(st.integers(min_value=0, max_value=4)) == 0:
            steps.append(None)
            continue
        odd = draw(st.integers(min_value=0, max_value=9)) == 0
        values = st.one_of(numbers, floats, st.integers(2**61, 2**62)) if odd else numbers
        keys = [st.one_of(base, st.none()) if odd else base for base in key_bases]
        groups: Groups = {}
        for _ in range(draw(st.integers(min_value=1, max_value=12))):
            fresh = odd or draw(st.integers(min_value=0, max_value=4)) == 0
            key = tuple(draw(k) for k in keys) if fresh else draw(st.sampled_from(pool))
            groups[key] = [draw(states_of(agg, values)) for agg in aggregates]
        steps.append(groups)
    return aggregates, steps


def exactly(left: Any, right: Any) -> bool:
    """The same value: floats to the bit (NaN equal to NaN); ints as ints."""
    if isinstance(left, list | tuple):
        return len(left) == len(right) and all(map(exactly, left, right))
    if isinstance(left, float) and isinstance(right, float):
        if math.isnan(left) or math.isnan(right):
            return math.isnan(left) and math.isnan(right)
        return struct.pack("d", left) == struct.pack("d", right)
    return type(left) is type(right) and bool(left == right)


def as_in_columns(aggregates: tuple[Aggregate[Any], ...], groups: Groups) -> Groups:
    """The reference's groups as a column holds them: an AVG's sum in a column of ints and
    floats is a float (its result is a float either way)."""
    relaxed = [i for i, agg in enumerate(aggregates) if isinstance(agg, Average)]
    floated = {
        i for i in relaxed if any(isinstance(states[i][0], float) for states in groups.values())
    }
    return {
        key: [
            (float(state[0]), state[1]) if i in floated else state for i, state in enumerate(states)
        ]
        for key, states in groups.items()
    }


def merge_window(window: ColumnarGroups, aggregates: Any, groups: Groups) -> bool:
    """Merge `groups` as a reducer merges a data set's window; False when the native decoder
    declined the data set (the caller merges its groups)."""
    data = encode_dataset(aggregates, {0: groups})
    windows = dataset_windows(data, aggregates)
    if windows is None:
        window.merge(decode_dataset(data).windows[0])
        return False
    window.merge_window(windows[0], lambda: decode_dataset(data).windows[0])
    return True


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenario())
def test_the_table_holds_the_reference_states_and_changes(case: Any) -> None:
    aggregates, steps = case
    window = ColumnarGroups(aggregates, track_changes=True)
    reference: Groups = {}
    changed: set[tuple[Any, ...]] = set()
    for groups in steps:
        if groups is None:
            window.saved()
            changed = set()
            continue
        data = encode_dataset(aggregates, {0: groups})
        merged = decode_dataset(data).windows[0]  # the groups as the wire gives them
        merge_window(window, aggregates, groups)
        merge_groups(aggregates, reference, merged)
        changed |= set(merged)
        found = window.groups()
        assert found.keys() == reference.keys()
        in_table = window._table is not None
        event("in the table" if in_table else "left the table")
        if in_table:
            expected = as_in_columns(aggregates, reference)
            assert all(exactly(found[key], expected[key]) for key in expected)
        delta = window.changed()
        rows = delta if isinstance(delta, dict) else frame_groups(aggregates, delta)
        if in_table:
            assert set(rows) == changed
        else:  # (frames may give a window of mostly changed groups whole, Python groups all)
            assert set(rows) >= changed
        assert all(exactly(rows[key], found[key]) for key in rows)


def test_a_declined_data_set_merges_nothing_into_the_table() -> None:
    """A SUM of floats after ints: the table declines it whole, the window's groups leave the
    table as its frame, whose merge falls back to Python groups: Python's sums, exactly."""
    aggregates = (CountAll(), Sum())
    window = ColumnarGroups(aggregates, track_changes=True)
    assert merge_window(window, aggregates, {("a",): [1, 1], ("b",): [1, 2]})
    assert window._table is not None
    window.saved()
    assert merge_window(window, aggregates, {("a",): [1, 0.5], ("c",): [1, 3.0]})
    assert window._table is None
    assert window.groups() == {("a",): [2, 1.5], ("b",): [1, 2], ("c",): [1, 3.0]}


def test_sums_that_may_leave_int64_leave_the_table() -> None:
    """2**62 twice: past what the table's int checks allow; the frames decline it too, and
    Python's ints sum exactly."""
    aggregates = (Sum(),)
    window = ColumnarGroups(aggregates)
    assert merge_window(window, aggregates, {("a",): [2**62], ("b",): [1]})
    assert window._table is None
    assert merge_window(window, aggregates, {("a",): [2**62]})
    assert window.groups() == {("a",): [2**63], ("b",): [1]}


def test_a_spilled_window_leaves_the_table_and_stays_exact(tmp_path: Any) -> None:
    """Spilling writes the table's groups as the merged frame; later data sets merge as frames,
    and the changes noted in the table still make the delta."""
    aggregates = (CountAll(), Sum(), Max())
    window = ColumnarGroups(aggregates, track_changes=True)
    reference: Groups = {}
    first = {(f"k{i}",): [1, i, i] for i in range(100)}
    later = {(f"k{i}",): [2, -i, i - 1] for i in range(50, 150)}
    merge_window(window, aggregates, first)
    merge_groups(aggregates, reference, first)
    window.saved()
    merge_window(window, aggregates, {("k1",): [1, 1, 1]})
    merge_groups(aggregates, reference, {("k1",): [1, 1, 1]})
    assert window.spill(SpillFolder(tmp_path)) > 0
    assert window._table is None and window.spilled()
    assert set(frame_groups(aggregates, window.changed())) == {("k1",)}
    merge_window(window, aggregates, later)
    merge_groups(aggregates, reference, later)
    assert window.groups() == reference
    delta = frame_groups(aggregates, window.changed())
    assert set(delta) >= {("k1",), *later}  # (the whole window once most of it changed)
    assert all(delta[key] == reference[key] for key in delta)


def test_a_window_without_keys_is_one_group() -> None:
    aggregates = (CountAll(), Average())
    window = ColumnarGroups(aggregates, track_changes=True)
    merge_window(window, aggregates, {(): [2, (3, 2)]})
    merge_window(window, aggregates, {(): [1, (0.5, 1)]})
    assert window._table is not None
    assert window.groups() == {(): [3, (3.5, 3)]}
    window.saved()
    assert window.changed().height == 0


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenario())
@example(((CountAll(),), [{(200,): [1]}, None, {(200,): [1], (-200,): [1]}, None, {(-200,): [1]}]))
def test_a_checkpoint_s_groups_load_into_the_table_as_a_mapper_s_keys(case: Any) -> None:
    """At each checkpoint the window is restarted from its frame (`of_frame`, as an owner
    recovering from a checkpoint): its groups load into a group table, none of them changed,
    with each key encoded as a mapper encodes it, so the data sets merged after it find their
    groups (a key of other bytes would be a second group: a key missing from the reference's,
    or states not its)."""
    aggregates, steps = case
    window = ColumnarGroups(aggregates, track_changes=True)
    reference: Groups = {}
    for groups in steps:
        if groups is not None:
            merge_window(window, aggregates, groups)
            merged = decode_dataset(encode_dataset(aggregates, {0: groups})).windows[0]
            merge_groups(aggregates, reference, merged)
            continue
        frame = window.frame()
        if frame is None or window._table is None:
            continue
        window = ColumnarGroups.of_frame(aggregates, frame, track_changes=True)
        event("loaded into a table" if window._table is not None else "loaded as a frame")
        assert window._table is not None, "a frame the table made is one it takes back"
        assert window.changed().height == 0
    found = window.groups()
    assert len(window) == len(found) == len(reference)  # (a key of other bytes: a second row)
    if window._table is not None:
        expected = as_in_columns(aggregates, reference)
        assert all(exactly(found[key], expected[key]) for key in expected)

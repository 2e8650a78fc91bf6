"""A columnar window's results finalized in columns (`finalize_frame`, `ResultRecords`) are the
records, byte for byte and in order, that the Python rows of the same groups give: random
tasks (aggregates, HAVING, output expressions, top-k, a revision's NULL aggregate), random keys
and states, slices of a few rows, rewinds' revisions."""

from __future__ import annotations

import datetime
import json
from dataclasses import replace
from typing import Any
from unittest.mock import patch

import polars as pl
import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

import reducer.results
import reducer.results_in_columns
from mars.aggregates import Average, CountAll, CountNonNull, Sum, state_aggregates
from mars.engine.columnar_layout import frame_groups
from mars.engine.finalize import result_spec
from mars.sql.parser import parse_task
from mars.tasks.replacement import null_before
from mars.tasks.spec import SpecRevision, TaskSpec
from reducer.columnar_groups import ColumnarGroups
from reducer.commit_records import CommitRecords, CommitTarget, commit_records
from reducer.open_windows import ClosedWindow
from reducer.progress_record import ProgressRecord
from reducer.results import result_records
from reducer.results_in_columns import FrameRecords
from reducer.spilled_frames import SpillFolder

CALLS = {
    "count(*) AS n": "n",
    "count(v) AS c": "c",
    "sum(v) AS s": "s",
    "min(v) AS lo": "lo",
    "max(v) AS hi": "hi",
    "avg(v) AS m": "m",
}
HAVINGS = ("", " HAVING count(*) > 2", " HAVING sum(v) IS NOT NULL", " HAVING avg(v) > 0")
EXTRA_OUTPUTS = ("", ", count(*) * 2 AS twice", ", avg(v) + 1 AS shifted", ", count(*) AS task")
KEY_VALUES = {
    "int": st.integers(-5, 5),
    "str": st.text(max_size=3),
    "bool": st.booleans(),
    "float": st.floats(-10, 10, allow_nan=False),
}
START = 60_000


@st.composite
def tasks(draw: st.DrawFn) -> TaskSpec:
    calls = draw(st.lists(st.sampled_from(sorted(CALLS)), min_size=1, max_size=4, unique=True))
    width = draw(st.integers(1, 2))
    keys = ", ".join(f"k{j}" for j in range(width))
    top_k = ""
    if draw(st.booleans()):  # taken in columns from the finalized frame (`top_k_frame`)
        ranked = draw(st.sampled_from([CALLS[call] for call in calls] + ["k0"]))
        order = draw(st.sampled_from(["DESC", "ASC"]))
        top_k = f" ORDER BY {ranked} {order} LIMIT {draw(st.integers(1, 4))}"
    sql = (
        f"SELECT {keys}, {', '.join(calls)}{draw(st.sampled_from(EXTRA_OUTPUTS))} FROM S "
        f"GROUP BY {keys}{draw(st.sampled_from(HAVINGS))}{top_k} WINDOWING 60 s"
    )
    spec = parse_task(sql, task_id="t")
    if draw(st.booleans()):  # a revision added the last aggregate: NULL before its window
        added = draw(st.sampled_from([START, START + 60_000]))
        revision = SpecRevision(from_window_ms=added, sql=sql, added=(len(spec.aggregates) - 1,))
        spec = replace(spec, revisions=(revision,))
        assert null_before(spec)
    return spec


@st.composite
def windows(draw: st.DrawFn, spec: TaskSpec) -> dict[tuple[Any, ...], list[Any]]:
    aggregates = state_aggregates(spec)
    key_values = [draw(st.sampled_from(sorted(KEY_VALUES))) for _ in range(len(spec.group_keys))]
    values = draw(st.sampled_from([st.integers(-100, 100), st.floats(-1e3, 1e3)]))
    if draw(st.integers(0, 9)) == 0:  # AVG sums beyond 2**53: finalized as Python rows
        values = st.integers(-(2**60), 2**60)
    keys = draw(
        st.lists(
            st.tuples(*(st.one_of(st.none(), KEY_VALUES[kind]) for kind in key_values)),
            min_size=1,
            max_size=12,
            unique=True,
        )
    )
    groups: dict[tuple[Any, ...], list[Any]] = {}
    for key in keys:
        states: list[Any] = []
        for agg in aggregates:
            if isinstance(agg, CountAll | CountNonNull):
                states.append(draw(st.integers(0, 9)))
            elif isinstance(agg, Average):
                count = draw(st.integers(0, 3))
                states.append((draw(values) if count else 0, count))
            elif isinstance(agg, Sum):
                states.append(draw(st.one_of(st.none(), values)))
            else:
                states.append(draw(st.one_of(st.none(), values)))
        groups[key] = states
    return groups


def commit(
    spec: TaskSpec, window: ClosedWindow, revision: int, *, results_kept: int = 0
) -> CommitRecords:
    target = CommitTarget(
        spec=spec,
        result_spec=result_spec(spec),
        key="t/0",
        progress_topic="mars.progress",
        progress_partitions=8,
        owner="r",
        results_kept=results_kept,
    )
    return commit_records(
        target,
        previous=ProgressRecord(closed_watermark=0, rseqs={0: 1}, merged={0: 0}),
        closed=[window],
        late=[],
        changes=None,
        closed_watermark=START + 60_000,
        rseqs={0: 2},
        merged={0: 1},
        checkpoints=(),
        now=1,
        revision=(lambda start: revision) if revision else None,
    )


def written_by(way: str) -> Any:
    """The JSON of records in columns written the native way (the extension must be built: no
    skip) or by Polars (the extension switched off)."""
    native = reducer.results_in_columns.mars_native
    assert native is not None, "mars_native is not built: make setup"
    return patch.object(
        reducer.results_in_columns, "mars_native", native if way == "native" else None
    )


@pytest.mark.parametrize("way", ["native", "polars"])
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), start=st.sampled_from([START, START + 60_000]), slice_rows=st.integers(1, 5))
def test_a_window_finalized_in_columns_gives_the_python_rows_records(
    way: str, data: st.DataObject, start: int, slice_rows: int
) -> None:
    spec = data.draw(tasks())
    groups = data.draw(windows(spec))
    aggregates = state_aggregates(spec)
    window = ColumnarGroups(aggregates)
    window.merge(groups)
    frame = window.frame()
    assume(frame is not None)  # what does not fit columns stays Python groups (tested there)
    assert frame is not None
    revision = data.draw(st.sampled_from([0, 3]))
    kept = data.draw(st.sampled_from([0, 1, 3, 50]))
    closed = ClosedWindow(start=start, groups={}, frame=frame)
    in_columns = commit(spec, closed, revision, results_kept=kept)
    in_rows = commit(
        spec, ClosedWindow(start=start, groups=frame_groups(aggregates, frame)), revision
    )
    with patch.object(reducer.results, "ROWS_PER_SLICE", slice_rows), written_by(way):
        got = [(r.topic, r.key, r.value) for r in in_columns.records()]
    assert got == [(r.topic, r.key, r.value) for r in in_rows.records()]
    assert in_columns.rows == in_rows.rows
    assert in_columns.progress == in_rows.progress
    for count in (1, 2, 50):
        assert in_columns.results.latest_values(count) == in_rows.results.latest_values(count)
    # The values kept while the transaction's records were made are those made again after.
    made_again = commit(spec, closed, revision).results
    for count in range(1, kept + 1):
        expected = made_again.latest_values(count)
        with patch.object(reducer.results.FrameRecords, "rows") as encode:
            assert in_columns.results.latest_values(count) == expected
        encode.assert_not_called()


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), part_bytes=st.sampled_from([0, 0, 200, 1 << 20]))
def test_a_spilled_window_closed_a_partition_at_a_time_gives_the_records_of_one_in_memory(
    data: st.DataObject, part_bytes: int, tmp_path_factory: Any
) -> None:
    """The same records (in another order: a partition's after another's), rows, progress and
    REST values as the window closed from memory; HAVING, AVG (counted first, or read back
    whole when not exact in columns) and top-k (read back whole) included. Its groups come in
    two data sets, spilled apart, so the close merges the partitions of two files first."""
    spec = data.draw(tasks())
    groups = data.draw(windows(spec))
    again = {
        key: groups[key] for key in data.draw(st.sets(st.sampled_from(sorted(groups, key=repr))))
    }
    aggregates = state_aggregates(spec)
    in_memory = ColumnarGroups(aggregates)
    spilling = ColumnarGroups(aggregates)
    folder = SpillFolder.open(tmp_path_factory.mktemp("spill"))
    for window in (in_memory, spilling):
        window.merge(groups)
        if window is spilling:
            window.spill(folder, part_bytes=part_bytes)
        window.merge(again)
    spilling.spill(folder, part_bytes=part_bytes)
    frame = in_memory.frame()
    assume(frame is not None and spilling.python_groups() is None)
    assert frame is not None
    on_disk = spilling.spilled_groups()
    assert on_disk is not None
    if on_disk.parts > 1:
        event("closed in partitions")
    kept = data.draw(st.sampled_from([0, 1, 3]))
    expected = commit(spec, ClosedWindow(start=START, groups={}, frame=frame), 0, results_kept=kept)
    got = commit(spec, ClosedWindow(start=START, groups={}, spilled=on_disk), 0, results_kept=kept)
    assert got.rows == expected.rows
    assert got.progress == expected.progress
    records = [(r.topic, r.key, r.value) for r in got.records()]
    assert sorted(records) == sorted((r.topic, r.key, r.value) for r in expected.records())
    values = [value for topic, _, value in records if topic == spec.output_topic]
    for count in range(1, kept + 1):
        assert got.results.latest_values(count) == values[max(0, len(values) - count) :]
    assert list(folder.path.iterdir()) == []  # read once, then removed


def test_an_average_of_ints_beyond_2_53_is_python_s_correctly_rounded_one() -> None:
    """549525271622064728 / 6: Python rounds once; a float column would round the sum first
    and give another float. Such a window is finalized from Python rows."""
    total, count = 549_525_271_622_064_728, 6
    assert total / count != float(total) / count
    spec = parse_task("SELECT k, avg(v) AS m FROM S GROUP BY k WINDOWING 60 s", task_id="t")
    window = ColumnarGroups(state_aggregates(spec))
    window.merge({("a",): [(total, count)]})
    frame = window.frame()
    assert frame is not None
    [record] = commit(spec, ClosedWindow(start=START, groups={}, frame=frame), 0).results
    assert json.loads(record.value or b"")["m"] == total / count


AWKWARD_TEXT = st.lists(
    st.sampled_from(['"', "\\", "/", "e+", "}", "\n", "\x00", "\x1f", "\u2028", "é", "😀", "a"]),
    max_size=6,
).map("".join)
AWKWARD_FLOATS = st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from(
    [1e20, 1e-7, -0.0, 5e-324, 1.7976931348623157e308, 1e16, 123456789012345678.0]
)
COLUMNS: dict[str, tuple[pl.DataType, st.SearchStrategy[Any]]] = {
    "text": (pl.String(), AWKWARD_TEXT),
    "float": (pl.Float64(), AWKWARD_FLOATS),
    "int": (pl.Int64(), st.integers(-(2**63), 2**63 - 1)),
    "uint": (pl.UInt64(), st.integers(0, 2**64 - 1)),
    "small": (pl.Int8(), st.integers(-128, 127)),
    "bool": (pl.Boolean(), st.booleans()),
}


@pytest.mark.parametrize("way", ["native", "polars"])
@settings(max_examples=300, deadline=None)
@given(
    kinds=st.lists(st.sampled_from(sorted(COLUMNS)), min_size=1, max_size=4),
    names=st.lists(
        st.sampled_from(["k0", "k1", "task", "window_start", "revision", "x"]),
        min_size=4,
        max_size=4,
        unique=True,
    ),
    rows=st.integers(0, 5),
    revision=st.sampled_from([0, 2]),
    cumulate=st.booleans(),
    data=st.data(),
)
def test_records_in_columns_are_the_bytes_msgspec_writes(
    way: str,
    kinds: list[str],
    names: list[str],
    rows: int,
    revision: int,
    cumulate: bool,
    data: st.DataObject,
) -> None:
    window = "WINDOWING 60 s SLIDE 60 s" if not cumulate else "WINDOWING CUMULATE 60 s STEP 30 s"
    spec = parse_task(
        f"SELECT k0, k1, count(*) AS n FROM S GROUP BY k0, k1 {window}", task_id="t.1"
    )
    columns = []
    for kind, name in zip(kinds, names, strict=False):
        dtype, values = COLUMNS[kind]
        nullable = st.none() | values
        columns.append(
            pl.Series(
                name, data.draw(st.lists(nullable, min_size=rows, max_size=rows)), dtype=dtype
            )
        )
    if data.draw(st.booleans()):
        columns.append(pl.Series("nothing", [None] * rows))  # a NULL-only column
    part = pl.DataFrame(columns)
    first = {
        "task": spec.id,
        "window_start": 60_000,
        "window_end": 120_000,
        "window_start_iso": "x",
        "window_end_iso": "y",
    }
    dicts = [{**first, **row} for row in part.to_dicts()]
    if revision:
        for row in dicts:
            row["revision"] = revision
    expected = result_records(spec, dicts)
    with written_by(way):
        records = FrameRecords.of(spec, first, part, revision)
        assert records is not None
        made = records.rows(0, part.height)
    assert made == (
        [record.key for record in expected],
        [record.value for record in expected],
    )


@pytest.mark.parametrize(
    "column",
    [
        pl.Series("d", [datetime.date(2024, 1, 1)]),
        pl.Series("f", [0.1], dtype=pl.Float32),
        pl.Series("l", [[1, 2]]),
    ],
)
def test_records_in_columns_decline_types_msgspec_writes_its_own_way(column: pl.Series) -> None:
    spec = parse_task("SELECT k0, count(*) AS n FROM S GROUP BY k0 WINDOWING 60 s", task_id="t")
    part = pl.DataFrame([pl.Series("k0", ["a"]), column])
    assert FrameRecords.of(spec, {"task": "t", "window_start": 0}, part, 0) is None

"""Property tests of spilling (`ColumnarWindowState.keep_within_budget`): a columnar state that
spills merged and appended frames to disk after every step (budget 0, or a budget a few
windows fit in)
gives the same closed windows, full checkpoints and incremental deltas as one that keeps them
in memory (also with a full checkpoint written after every step, which compacts each window
into a merged frame to spill), on the random scenarios of `test_columnar_windows.py` (values
that do not fit columns included). The folder holds exactly the open windows' spill files:
those of closed and rewound windows are removed, and the folder goes when the owner releases
the state."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from unittest.mock import patch

import polars as pl
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from mars.aggregates import CountAll, Sum
from mars.engine.columnar_checkpoint import checkpoint_dataset
from mars.engine.columnar_layout import frame_groups
from mars.engine.dataset import OpenWindows, decode_dataset, encode_dataset
from reducer.columnar_groups import ColumnarGroups
from reducer.columnar_windows import ColumnarWindowState
from reducer.results import SpilledOutputs
from reducer.spilled_frames import SpilledFrame, SpillFolder
from tests.unit.reducer.test_columnar_windows import (
    ASSIGNER,
    STARTS,
    close_both,
    rewind_both,
    same,
    same_windows,
    scenario,
)


def columnar(aggregates: Any, **spilling: Any) -> ColumnarWindowState:
    return ColumnarWindowState.starting_columnar(
        assigner=ASSIGNER, aggregates=aggregates, rseqs={0: 1, 1: 1}, incremental=True, **spilling
    )


def holds_as_live(delta: OpenWindows, changed: OpenWindows, live: OpenWindows) -> bool:
    """Whether `delta` holds every group of `changed` with its state there, and each of its
    groups with its state in `live`."""
    holds_changed = all(
        key in delta.get(start, {}) and same(state, delta[start][key])
        for start, groups in changed.items()
        for key, state in groups.items()
    )
    return holds_changed and all(
        same(state, live[start][key])
        for start, groups in delta.items()
        for key, state in groups.items()
    )


def spill_files(folder: SpillFolder) -> int:
    return len(list(folder.path.iterdir()))


def windows_files(state: ColumnarWindowState) -> set[Path]:
    return {path for window in state.columns.values() for path in window.spill_paths()}


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=scenario(), budget=st.sampled_from([0, 0, 2_000]), full_each_step=st.booleans())
@example(  # one of two groups changed: the delta in memory is the window, the spilled one not
    case=(
        (CountAll(),),
        [
            ("merge", 0, {40: {("", ""): [0], ("0", ""): [0]}}),
            ("checkpoint",),
            ("merge", 0, {40: {("", ""): [0]}}),
            ("checkpoint",),
        ],
    ),
    budget=0,
    full_each_step=False,
)
def test_a_state_that_spills_gives_what_one_in_memory_gives(
    case: Any, budget: int, full_each_step: bool, tmp_path_factory: Any
) -> None:
    aggregates, steps = case
    folder = SpillFolder.open(Path(tmp_path_factory.mktemp("spill")))
    kept = columnar(aggregates)
    spilling = columnar(aggregates, budget_bytes=budget, spill_folder=folder)
    for step in steps:
        if step[0] == "merge":
            _, bucket, windows = step
            if any(spilling.columns[s].spilled() for s in windows if s in spilling.columns):
                event("a merge into a spilled window")
            seq = kept.merged[bucket] + 1
            dataset = decode_dataset(encode_dataset(aggregates, windows))
            assert spilling.merge(bucket, seq, dataset) == kept.merge(bucket, seq, dataset)
        elif step[0] == "close":
            if spilling.spilled_windows():
                event("a close with spilled windows")
            close_both(kept, spilling, step[1], aggregates)
        elif step[0] == "rewind":
            rewind_both(kept, spilling, step[1])
        else:
            if spilling.spilled_windows():
                event("a checkpoint with spilled windows")
            delta, kept_delta = spilling.checkpoint_delta(), kept.checkpoint_delta()
            assert (delta is None) == (kept_delta is None)
            if delta is not None and kept_delta is not None:
                # a spilled window's delta is its changed groups; one in memory may be the
                # whole window (a delta may hold unchanged groups, never miss a changed one)
                assert holds_as_live(kept_delta, delta, kept.open_groups())
            full = checkpoint_dataset(spilling.checkpoint_data()).windows
            assert same_windows(full, checkpoint_dataset(kept.checkpoint_data()).windows)
            spilling.checkpointed()
            kept.checkpointed()
        if full_each_step:  # a full checkpoint compacts every window: more frames to spill
            full = checkpoint_dataset(spilling.checkpoint_data()).windows
            assert same_windows(full, checkpoint_dataset(kept.checkpoint_data()).windows)
        spilling.keep_within_budget()
        assert spilling.keep_within_budget() == 0  # within budget, or nothing left to spill
        assert set(folder.path.iterdir()) == windows_files(spilling)
    assert same_windows(spilling.open_groups(), kept.open_groups())
    assert spill_files(folder) == 0  # reading them back removed the files
    spilling.release()
    assert not folder.path.exists()


def test_merged_frames_past_the_budget_go_to_disk_the_latest_windows_first(
    tmp_path: Path,
) -> None:
    aggregates = (CountAll(), Sum())
    folder = SpillFolder.open(tmp_path)
    state = columnar(aggregates, budget_bytes=None, spill_folder=folder)
    for seq, start in enumerate(STARTS, start=1):
        groups = {(f"k{i}",): [1, i] for i in range(100)}
        state.merge(0, seq, decode_dataset(encode_dataset(aggregates, {start: groups})))
    state.checkpoint_data()  # compacts each window into its merged frame
    state.checkpointed()  # (and the keys of changes since are let go)
    per_window = state.columns[STARTS[0]].memory_bytes()
    state.budget_bytes = 2 * per_window
    assert state.keep_within_budget() == len(STARTS) - 2
    assert [start for start, w in state.columns.items() if w.spilled()] == list(STARTS[2:])
    assert spill_files(folder) == len(STARTS) - 2
    closed = state.close(STARTS[-1] + 100)
    assert [w.start for w in closed] == list(STARTS)
    assert all(len(w.all_groups(aggregates)) == 100 for w in closed)
    for window in closed:
        window.release()
    assert spill_files(folder) == 0


def test_a_killed_owners_folder_is_removed_by_the_next_one(tmp_path: Path) -> None:
    stale = tmp_path / "owner-999999999-x"  # no such process
    stale.mkdir()
    (stale / "1.arrow").write_bytes(b"left by a killed owner")
    live = SpillFolder.open(tmp_path)
    assert not stale.exists()
    assert SpillFolder.open(tmp_path).path.exists() and live.path.exists()


def test_appended_frames_spill_too_and_come_back_at_the_close(tmp_path: Path) -> None:
    aggregates = (CountAll(), Sum())
    folder = SpillFolder.open(tmp_path)
    state = columnar(aggregates, budget_bytes=0, spill_folder=folder)
    for seq in range(1, 4):  # three small data sets: appended, short of a compaction
        groups = {(f"k{i}",): [1, i] for i in range(10)}
        state.merge(0, seq, decode_dataset(encode_dataset(aggregates, {STARTS[0]: groups})))
        assert state.keep_within_budget() == 1
    window = state.columns[STARTS[0]]
    assert len(window.spill_paths()) == spill_files(folder) == 3
    state.checkpointed()  # the keys of changes let go: nothing of the window is in memory
    assert window.memory_bytes() == 0
    [closed] = state.close(STARTS[-1] + 100)
    assert closed.all_groups(aggregates) == {(f"k{i}",): [3, 3 * i] for i in range(10)}
    closed.release()
    assert spill_files(folder) == 0


def test_tracked_changes_hold_the_keys_hashes_not_the_appended_frames(tmp_path: Path) -> None:
    """The keys of appended frames are hashed as changed before a compaction merges the frames
    away and before a spill lets them go: the window then holds the hashes (8 bytes a key),
    not a reference to each frame until the next delta."""
    aggregates = (CountAll(), Sum())
    hashes = 3 * 1_000 * 8  # three data sets of the same 1,000 keys, not yet deduplicated
    compacted = ColumnarGroups(aggregates, track_changes=True)
    spilled = ColumnarGroups(aggregates, track_changes=True)
    for dataset in range(3):
        for window in (compacted, spilled):
            window.merge({(f"k{i}",): [1, dataset] for i in range(1_000)})
    frame = compacted.frame()
    assert frame is not None and frame.height == 1_000
    assert compacted.memory_bytes() == frame.estimated_size() + hashes
    spilled.spill(SpillFolder.open(tmp_path), part_bytes=1_000)
    assert spilled.memory_bytes() == hashes
    assert len(compacted.changed()) == len(spilled.changed()) == 1_000


def test_a_spill_writes_the_frames_appended_since_the_last_as_one_file(tmp_path: Path) -> None:
    """A compaction reads every file once per partition, so the frames a budgeted owner's
    reads append between two spills (8 data sets) go in one file, not one file each."""
    aggregates = (CountAll(), Sum())
    folder = SpillFolder.open(tmp_path)
    window = ColumnarGroups(aggregates)
    window.merge({(f"k{i}",): [1, i] for i in range(1_000)})
    window.frame()  # merged
    for spill in range(2):
        for dataset in range(8):
            window.merge({(f"k{i}",): [1, dataset] for i in range(spill, 1_000, 7)})
        window.spill(folder, part_bytes=1_000)
    assert len(window.spill_paths()) == spill_files(folder) == 3  # merged, then 2 spills


def test_a_spilled_windows_partitions_hold_min_part_rows_at_the_least(tmp_path: Path) -> None:
    """However small the budget, a partition is meant to hold `min_part_rows`: 64 partitions
    of a few thousand rows made a spilling owner about 4x slower than 4 of 60,000."""
    aggregates = (CountAll(), Sum())
    window = ColumnarGroups(aggregates)
    window.merge({(f"k{i}",): [1, i] for i in range(20_000)})
    window.spill(SpillFolder.open(tmp_path), part_bytes=1, min_part_rows=5_000)
    spilled = window.spilled_groups()
    assert spilled is not None and spilled.parts == 4


def test_a_spilled_window_is_merged_and_closed_a_partition_at_a_time(tmp_path: Path) -> None:
    """What bounds a spilled window's memory: a compaction and a close read its files one hash
    partition at a time, never whole, each partition about `part_bytes` of the merged frame's
    bytes; the partitions double as the window grows past them."""
    aggregates = (CountAll(), Sum())
    folder = SpillFolder.open(tmp_path)
    reference, window = ColumnarGroups(aggregates), ColumnarGroups(aggregates)
    first = {(f"10.0.{i // 256}.{i % 256}",): [1, i] for i in range(20_000)}
    second = {(f"10.0.{i // 256}.{i % 256}",): [1, i] for i in range(0, 40_000, 2)}
    reference.merge(first)
    merged = reference.frame()
    assert merged is not None
    part_bytes = int(merged.estimated_size()) // 16  # the first spill: 16 partitions
    reference.merge(second)
    for groups in (first, second):  # spilled apart: a merged file, then an appended one
        window.merge(groups)
        window.spill(folder, part_bytes=part_bytes)
    read: list[int] = []
    part = SpilledFrame.part

    def one_part(spilled: SpilledFrame, index: int) -> pl.DataFrame:
        found = part(spilled, index)
        read.append(found.height)
        return found

    whole = AssertionError("a spill file read whole")
    with (
        patch.object(SpilledFrame, "part", one_part),
        patch.object(SpilledFrame, "read", side_effect=whole),
    ):
        spilled = window.spilled_groups()  # its two files merged on disk, 30,000 groups
        assert spilled is not None and spilled.height == 30_000
        assert spilled.parts == 32  # 16 at 20,000 groups, doubled for 30,000
        compaction, read[:] = list(read), []
        outputs = SpilledOutputs(groups=spilled, finalize=lambda frame: frame, rows=30_000)
        closed = pl.concat(list(outputs.frames()))
    assert max(compaction) <= 2 * 20_000 // 16 and len(compaction) == 2 * 32
    assert len(read) == 32 and max(read) <= 2 * 30_000 // 32
    assert frame_groups(aggregates, closed) == reference.groups()
    assert spill_files(folder) == 0  # the close's file went once its partitions were read

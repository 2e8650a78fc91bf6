"""A reducer unit applying a rewind (docs/rewind.md): the reset of its windows from `T'`, the
revision of their rows and the progress that carries the rewinds."""

from __future__ import annotations

import json

from mars.aggregates import CountAll, Sum, state_aggregates
from mars.engine.dataset import DataSet
from mars.engine.finalize import result_spec
from mars.tasks.rewind import revision_of
from mars.windows import WindowAssigner
from reducer.commit_records import CommitTarget, commit_records
from reducer.open_windows import ClosedWindow, OpenWindowState
from reducer.progress_record import CheckpointRef, ProgressRecord
from tests.unit.engine.engine_helpers import make_spec

AGGS = (CountAll(), Sum())


def _dataset(windows: dict[int, dict[tuple[str, ...], list[int]]]) -> DataSet:
    return DataSet(aggregates=AGGS, windows={s: dict(g) for s, g in windows.items()})


def test_a_rewind_drops_the_open_windows_from_t_and_reopens_the_closed_ones() -> None:
    state = OpenWindowState.starting(
        assigner=WindowAssigner(size_ms=10, slide_ms=10, grace_ms=0),
        aggregates=AGGS,
        rseqs={0: 1},
    )
    state.merge(0, 1, _dataset({0: {("a",): [1, 1]}, 10: {("a",): [2, 2]}}))
    assert [w.start for w in state.close(20)] == [0, 10]
    state.merge(0, 2, _dataset({20: {("a",): [3, 3]}, 30: {("a",): [4, 4]}}))
    state.checkpointed()
    assert not state.checkpoint_now

    state.rewind(1, 10)
    assert state.windows == {} and state.closed_watermark == 19
    assert state.checkpoint_now  # the next commit must carry a checkpoint
    assert state.rewind_generation == 1 and state.revision(10) == 1 and state.revision(0) == 0
    # The re-read brings window 10 again (open now); window 0 stays closed: late.
    late = state.merge(0, 3, _dataset({0: {("a",): [1, 1]}, 10: {("a",): [2, 2]}}))
    assert [x.window_start for x in late] == [0]
    assert [(w.start, w.groups) for w in state.close(25)] == [(10, {("a",): [2, 2]})]
    state.checkpointed()
    assert not state.checkpoint_now


def test_rows_of_rewound_windows_carry_their_revision_and_the_progress_the_rewinds() -> None:
    spec = make_spec()
    target = CommitTarget(
        spec=spec,
        result_spec=result_spec(spec),
        key="t/0",
        progress_topic="mars.progress",
        progress_partitions=8,
        owner="r",
    )
    previous = ProgressRecord(closed_watermark=10, rseqs={0: 3}, merged={0: 5})
    commit = commit_records(
        target,
        previous=previous,
        closed=[ClosedWindow(start=10, groups={("a",): [2]}), ClosedWindow(start=20, groups={})],
        late=[],
        changes=None,
        closed_watermark=30,
        rseqs={0: 6},
        merged={0: 5},
        checkpoints=(CheckpointRef(1, "x"),),
        now=1,
        rewinds=((4, 10),),
        revision=lambda start: revision_of(((4, 10),), start),
    )
    rows = [json.loads(r.value or b"") for r in commit.results]
    assert [(row["window_start"], row.get("revision")) for row in rows] == [(10, 4)]
    assert commit.progress.rewinds == ((4, 10),)
    assert ProgressRecord.from_bytes(commit.progress.to_bytes()) == commit.progress
    # A progress record without rewinds reads as before.
    assert ProgressRecord.from_bytes(previous.to_bytes()).rewinds == ()
    assert state_aggregates(spec)

"""`commit_records`: one commit's Kafka records and new progress, without Kafka or Redis."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from mars.aggregates import state_aggregates
from mars.engine.finalize import result_spec
from mars.tasks.spec import TaskOptions, TaskSpec
from reducer.commit_records import CommitRecords, CommitTarget, UnitChanges, commit_records
from reducer.open_windows import ClosedWindow, LateContribution, WindowGroups
from reducer.progress_record import CheckpointRef, ProgressRecord, partition_for
from tests.unit.engine.engine_helpers import make_spec

PROGRESS_TOPIC = "mars.progress"


def target(spec: TaskSpec) -> CommitTarget:
    return CommitTarget(
        spec=spec,
        result_spec=result_spec(spec),
        key="t/0",
        progress_topic=PROGRESS_TOPIC,
        progress_partitions=8,
        owner="reducer-a",
    )


def late(spec: TaskSpec, *, start: int, key: str, count: int) -> LateContribution:
    return LateContribution.of(state_aggregates(spec), 0, 7, start, (key,), [count])


def build(spec: TaskSpec, **overrides: Any) -> CommitRecords:
    previous = ProgressRecord(
        closed_watermark=10,
        rseqs={0: 3},
        merged={0: 5},
        counters={"windows_emitted": 4, "results_emitted": 9, "late_records": 1},
        checkpoint=CheckpointRef(2, "abc"),
    )
    args: dict[str, Any] = {
        "previous": previous,
        "closed": [],
        "late": [],
        "changes": None,
        "closed_watermark": 12,
        "rseqs": {0: 6},
        "merged": {0: 5},
        "checkpoints": previous.checkpoint_chain,
        "now": 1_000,
    }
    return commit_records(target(spec), **{**args, **overrides})


def values(commit: CommitRecords, topic: str) -> list[dict[str, Any]]:
    return [json.loads(r.value or b"null") for r in commit.records() if r.topic == topic]


def test_results_and_late_records_come_with_a_progress_that_counts_exactly_them() -> None:
    spec = make_spec()
    closed = [
        ClosedWindow(start=10, groups={("a",): [2], ("b",): [1]}),
        ClosedWindow(start=12, groups={("a",): [5]}),
    ]
    lates = [late(spec, start=2, key="a", count=3), late(spec, start=4, key="b", count=2)]
    commit = build(spec, closed=closed, late=lates, checkpoints=(CheckpointRef(3, "def"),))

    records = list(commit.records())
    assert [r.topic for r in records] == [
        *[spec.output_topic] * 3,
        *[spec.late_topic] * 2,
        PROGRESS_TOPIC,
    ]
    assert list(commit.results) == records[:3] and commit.rows == 3
    rows = values(commit, spec.output_topic)
    assert [(row["window_start"], row["k"], row["n"]) for row in rows] == [
        (10, "a", 2),
        (10, "b", 1),
        (12, "a", 5),
    ]
    assert [(x["window_start"], x["records"]) for x in values(commit, spec.late_topic)] == [
        (2, 3),
        (4, 2),
    ]
    progress_record = records[-1]
    assert progress_record.key == b"t/0"
    assert progress_record.partition == partition_for("t/0", 8)
    assert ProgressRecord.from_bytes(progress_record.value or b"") == commit.progress
    assert commit.progress == ProgressRecord(
        closed_watermark=12,
        rseqs={0: 6},
        merged={0: 5},
        counters={
            "windows_emitted": 4 + 2,
            "results_emitted": 9 + 3,
            "late_records": 1 + 3 + 2,
            "late_contributions": 0 + 2,
        },
        checkpoint=CheckpointRef(3, "def"),
        owner="reducer-a",
        committed_ms=1_000,
    )


def test_a_commit_that_only_moves_rseq_holds_just_the_progress() -> None:
    commit = build(make_spec())
    assert list(commit.records()) == [commit.progress_record]
    assert list(commit.results) == [] and commit.rows == 0
    assert commit.progress.rseqs == {0: 6}
    assert commit.progress.checkpoint == CheckpointRef(2, "abc")  # the previous one, kept
    assert commit.progress.counters == {
        "windows_emitted": 4,
        "results_emitted": 9,
        "late_records": 1,
        "late_contributions": 0,
    }


def test_emit_changes_sends_tombstones_then_current_then_final_rows() -> None:
    spec = replace(make_spec(), options=TaskOptions(buckets=4, emit_interval_ms=100))
    assert spec.updates_topic is not None
    changes = UnitChanges(
        changed=[WindowGroups(start=14, groups={("c",): [4]})], gone=[(6, ("d",))]
    )
    closed = [ClosedWindow(start=12, groups={("a",): [5]})]
    commit = build(spec, closed=closed, changes=changes)

    updates = [r for r in commit.records() if r.topic == spec.updates_topic]
    assert updates[0].value is None and json.loads(updates[0].key) == ["t", 6, ["d"]]
    rows = [json.loads(r.value or b"") for r in updates[1:]]
    assert [(row["window_start"], row["k"], row["final"]) for row in rows] == [
        (14, "c", False),
        (12, "a", True),
    ]
    topics = [r.topic for r in commit.records()]
    assert topics == [spec.output_topic, *[spec.updates_topic] * 3, PROGRESS_TOPIC]


def test_no_updates_topic_means_no_update_records() -> None:
    spec = make_spec()
    commit = build(spec, closed=[ClosedWindow(start=12, groups={("a",): [5]})])
    assert [r.topic for r in commit.records()] == [spec.output_topic, PROGRESS_TOPIC]


def test_the_inputs_are_left_as_they_were() -> None:
    rseqs, merged = {0: 6}, {0: 5}
    commit = build(make_spec(), rseqs=rseqs, merged=merged)
    rseqs[0], merged[0] = 99, 99  # the owner's state moves on after the commit
    assert commit.progress.rseqs == {0: 6} and commit.progress.merged == {0: 5}

"""Pure parts of the ZooKeeper documents: unit keys, the assignment JSON, task records."""

from __future__ import annotations

import json

import pytest

from mars.registry import CorruptTaskRecordError, TaskRecord, TaskStatus, ZkPaths
from mars.registry.unit_assignment import UnitAssignment, UnitAssignmentFormatError, units_of
from mars.registry.units import Unit
from mars.tasks.spec import (
    AggFunc,
    AggregateCall,
    EventTime,
    OutputColumn,
    TaskOptions,
    TaskSpec,
    TimeFormat,
    WindowSpec,
)


def _spec(task_id: str, buckets: int) -> TaskSpec:
    return TaskSpec(
        id=task_id,
        sql="SELECT count(*) AS n FROM s WINDOWING 10 s",
        source_topic="s",
        event_time=EventTime(field=None, format=TimeFormat.PROCESSING),
        window=WindowSpec(size_ms=10_000, slide_ms=10_000),
        group_keys=(),
        aggregates=(AggregateCall(func=AggFunc.COUNT, argument=None, alias="n"),),
        outputs=(OutputColumn(name="n", expression="n"),),
        options=TaskOptions(buckets=buckets),
    )


def _record(task_id: str, buckets: int, status: TaskStatus) -> TaskRecord:
    return TaskRecord(
        spec=_spec(task_id, buckets), status=status, reason=None, created_ms=1, updated_ms=2
    )


def test_unit_keys_round_trip() -> None:
    assert Unit("clicks.v2", 7).key == "clicks.v2/7"
    assert Unit.parse("clicks.v2/7") == Unit("clicks.v2", 7)
    for bad in ("clicks", "/3", "clicks/", "clicks/x", "clicks/-1"):
        with pytest.raises(ValueError):
            Unit.parse(bad)


def test_assignment_json_round_trip_and_ownership() -> None:
    assignment = UnitAssignment(
        generation=3,
        leader="r-a",
        units={Unit("t", 0): "r-a", Unit("t", 1): "r-b"},
        moves={Unit("t", 1): "r-b"},
    )
    data = assignment.to_bytes()
    units = {"t/0": "r-a", "t/1": "r-b"}
    assert json.loads(data) == {
        "generation": 3,
        "leader": "r-a",
        "units": units,
        "moves": {"t/1": "r-b"},
    }
    decoded = UnitAssignment.from_bytes(data, version=5)
    assert decoded.units == assignment.units and decoded.version == 5
    assert decoded.moves == assignment.moves
    old = UnitAssignment.from_bytes(b'{"generation": 1, "leader": "x", "units": {"t/0": "r"}}')
    assert old.moves == {}  # written before load moves existed
    assert decoded.owned_by("r-b") == frozenset({Unit("t", 1)})
    assert decoded.owned_by("r-z") == frozenset()
    for bad in (b"{", b"[]", b'{"generation": 1, "leader": "x", "units": {"t": "r"}}'):
        with pytest.raises(UnitAssignmentFormatError):
            UnitAssignment.from_bytes(bad)


def test_units_are_every_bucket_of_running_tasks_only() -> None:
    tasks = [
        _record("a", 2, TaskStatus.RUNNING),
        _record("b", 3, TaskStatus.PAUSED),
        _record("c", 1, TaskStatus.FAILED),
    ]
    assert units_of(tasks) == {Unit("a", 0), Unit("a", 1)}


def test_task_record_round_trip_and_corruption() -> None:
    record = _record("a", 2, TaskStatus.FAILED)
    assert TaskRecord.from_bytes("a", record.to_bytes(), version=4) == TaskRecord(
        spec=record.spec,
        status=record.status,
        reason=None,
        created_ms=1,
        updated_ms=2,
        version=4,
    )
    with pytest.raises(CorruptTaskRecordError, match="'a'"):
        TaskRecord.from_bytes("a", b'{"spec": {}}', version=0)


def test_paths_follow_the_root() -> None:
    paths = ZkPaths(root="/x/mars")
    assert paths.task("t") == "/x/mars/tasks/t"
    assert paths.assignment == "/x/mars/assignment"
    assert ZkPaths().reducer("r") == "/mars/reducers/r"
    with pytest.raises(ValueError):
        ZkPaths(root="mars/")

"""The task router: RUNNING tasks by topic, changes reported once, bad specs isolated."""

from __future__ import annotations

from dataclasses import replace

from mapper.task_router import TaskRouter
from mars.engine.preaggregate import Preaggregator
from mars.registry import TaskRecord, TaskStatus
from mars.sql import parse_task
from mars.tasks.spec import TaskSpec

SQL = "SELECT sip, count(*) AS n FROM {topic} GROUP BY sip WINDOWING 60 s"


def _record(task_id: str, topic: str, status: TaskStatus = TaskStatus.RUNNING) -> TaskRecord:
    spec = parse_task(SQL.format(topic=topic), task_id=task_id)
    return TaskRecord(spec=spec, status=status, reason=None, created_ms=0, updated_ms=0)


def test_running_tasks_are_routed_by_topic_and_changes_reported_once() -> None:
    router = TaskRouter()
    assert router.refresh() is None
    router.on_tasks({"a": _record("a", "s1"), "b": _record("b", "s1"), "c": _record("c", "s2")})
    change = router.refresh()
    assert change is not None
    assert change.added == {"a", "b", "c"} and change.topics_changed
    assert [t.id for t in router.tasks_for("s1")] == ["a", "b"]
    assert router.topics == {"s1", "s2"}
    assert router.refresh() is None

    router.on_tasks({"a": _record("a", "s1"), "b": _record("b", "s1", TaskStatus.PAUSED)})
    change = router.refresh()
    assert change is not None
    assert change.removed == {"b", "c"} and not change.added and change.topics_changed
    assert router.topics == {"s1"}


def test_same_spec_keeps_its_compiled_task() -> None:
    compiled: list[str] = []

    def compile_task(spec: TaskSpec) -> Preaggregator:
        compiled.append(spec.id)
        return Preaggregator.for_spec(spec)

    router = TaskRouter(compile_task=compile_task)
    router.on_tasks({"a": _record("a", "s1")})
    router.refresh()
    router.on_tasks({"a": replace(_record("a", "s1"), version=3)})
    assert router.refresh() is None
    assert compiled == ["a"]


def test_a_task_that_does_not_compile_is_skipped_not_fatal() -> None:
    def compile_task(spec: TaskSpec) -> Preaggregator:
        if spec.id == "bad":
            raise ValueError("cannot compile")
        return Preaggregator.for_spec(spec)

    router = TaskRouter(compile_task=compile_task)
    router.on_tasks({"bad": _record("bad", "s1"), "good": _record("good", "s1")})
    change = router.refresh()
    assert change is not None and change.added == {"good"}
    assert [t.id for t in router.tasks_for("s1")] == ["good"]


def test_a_task_pre_aggregated_by_spark_is_left_to_the_spark_stream() -> None:
    router = TaskRouter()
    spark = replace(
        _record("b", "s1"),
        spec=parse_task(SQL.format(topic="s1") + " WITH (preaggregation = 'spark')", task_id="b"),
    )
    router.on_tasks({"a": _record("a", "s1"), "b": spark})
    router.refresh()
    assert [t.id for t in router.tasks_for("s1")] == ["a"]

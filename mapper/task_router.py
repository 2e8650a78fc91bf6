"""Which RUNNING tasks read which topic, followed from the task registry.

The registry's watch calls `TaskRouter.on_tasks` on a kazoo thread with the full task set; the
mapper loop calls `refresh()` on its own thread between batches and sees the change there, so
all Kafka and Redis work stays on one thread. A task whose spec does not compile is logged and
left out: a bad task cannot hurt the others. Per topic it keeps the tasks' shared decoders, so
each batch is decoded once for all of them.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from mars.engine.preaggregate import Preaggregator
from mars.engine.shared_decode import TopicDecoders
from mars.registry import TaskRecord, TaskStatus
from mars.tasks.spec import Preaggregation, TaskSpec

log = logging.getLogger(__name__)

PreaggregatorFactory = Callable[[TaskSpec], Preaggregator]


@dataclass(frozen=True, slots=True, kw_only=True)
class ActiveTask:
    """A task this mapper maps: its spec and its compiled pre-aggregation."""

    spec: TaskSpec
    preaggregator: Preaggregator

    @property
    def id(self) -> str:
        return self.spec.id

    @property
    def topic(self) -> str:
        return self.spec.source_topic


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskSetChange:
    """What `refresh` changed: ids started, ids stopped, and whether the topic set moved."""

    added: frozenset[str]
    removed: frozenset[str]
    topics_changed: bool


class TaskRouter:
    """The RUNNING tasks by id and by source topic (PAUSED, FAILED, DELETED are not mapped,
    nor tasks a Spark stream pre-aggregates: `preaggregation = 'spark'`)."""

    def __init__(self, *, compile_task: PreaggregatorFactory = Preaggregator.for_spec) -> None:
        self._compile = compile_task
        self._lock = threading.Lock()
        self._pending: dict[str, TaskRecord] | None = None
        self._tasks: dict[str, ActiveTask] = {}
        self._by_topic: dict[str, tuple[ActiveTask, ...]] = {}
        self._decoders: dict[str, TopicDecoders] = {}
        self._failed: dict[str, TaskSpec] = {}  # specs that did not compile (logged once)

    def on_tasks(self, records: Mapping[str, TaskRecord]) -> None:
        """Registry watch callback (any thread): remember the newest task set."""
        with self._lock:
            self._pending = dict(records)

    def refresh(self) -> TaskSetChange | None:
        """Apply the newest task set, if one arrived since the last call."""
        with self._lock:
            records, self._pending = self._pending, None
        if records is None:
            return None
        running = {
            task_id: record.spec
            for task_id, record in records.items()
            if record.status is TaskStatus.RUNNING
            and record.spec.options.preaggregation is Preaggregation.MAPPERS
        }
        before_topics = frozenset(self._by_topic)
        tasks: dict[str, ActiveTask] = {}
        for task_id, spec in sorted(running.items()):
            current = self._tasks.get(task_id)
            if current is not None and current.spec == spec:
                tasks[task_id] = current
                continue
            compiled = self._compile_or_none(spec)
            if compiled is not None:
                tasks[task_id] = ActiveTask(spec=spec, preaggregator=compiled)
        added = frozenset(
            t for t in tasks if t not in self._tasks or self._tasks[t].spec != tasks[t].spec
        )
        removed = frozenset(
            t for t in self._tasks if t not in tasks or self._tasks[t].spec != tasks[t].spec
        )
        self._tasks = tasks
        by_topic: dict[str, list[ActiveTask]] = {}
        for task in tasks.values():
            by_topic.setdefault(task.topic, []).append(task)
        self._by_topic = {topic: tuple(group) for topic, group in by_topic.items()}
        self._decoders = {
            topic: TopicDecoders(task.preaggregator.decoder for task in group)
            for topic, group in by_topic.items()
        }
        if not added and not removed:
            return None
        return TaskSetChange(
            added=added, removed=removed, topics_changed=frozenset(self._by_topic) != before_topics
        )

    def _compile_or_none(self, spec: TaskSpec) -> Preaggregator | None:
        try:
            compiled = self._compile(spec)
        except Exception as exc:  # any bad spec: skip the task, keep the others running
            if self._failed.get(spec.id) != spec:
                log.error("task %s cannot be mapped, skipping it: %s", spec.id, exc)
                self._failed[spec.id] = spec
            return None
        self._failed.pop(spec.id, None)
        return compiled

    @property
    def tasks(self) -> Mapping[str, ActiveTask]:
        return self._tasks

    @property
    def topics(self) -> frozenset[str]:
        return frozenset(self._by_topic)

    def tasks_for(self, topic: str) -> tuple[ActiveTask, ...]:
        return self._by_topic.get(topic, ())

    def decoders_for(self, topic: str) -> TopicDecoders:
        """One decode per batch for the topic's tasks (`mars.engine.shared_decode`)."""
        return self._decoders.get(topic) or TopicDecoders(())

"""Experiment 11: many tasks over one topic, the usual deployment (dozens of statistics over
one stream).

Per task count N: N tasks drawn round-robin from five shapes (`benchmarks.task_shapes`), all
over the preloaded topic S, registered one after the other at once with the processes of the
Mars end-to-end run (mappers and reducers started and idle before). Time from registering the
first task until every task's every data window is readable (read_committed) in its own result
topic, read by one consumer for all of them; CPU seconds of the mappers + reducers from the
registration. Each run has its own ZooKeeper root, consumer group and fresh task ids; its
tasks' Redis keys and Kafka topics are deleted after it. Runs are interleaved over the counts,
after one run that is not counted (`warmup_tasks`: the broker's JIT warms up in it).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from benchmarks.experiment import Base, Context, Section, env_ints
from benchmarks.harness import BenchCluster, fresh_id
from benchmarks.report_tasks import TASKS_HEADING, tasks_section
from benchmarks.results_reader import ResultReader, TopicsReader
from benchmarks.task_figures import (
    Shape,
    TasksResult,
    TasksRun,
    count_summary,
    with_time_ratios,
)
from benchmarks.task_shapes import COUNT_FIELD, SHAPES, Completion, TaskShape, shapes_for
from mars.sql import parse_task
from mars.tasks.spec import TaskSpec
from mars.tasks.topics import (
    Replication,
    TopicError,
    delete_task_topics,
    ensure_topics,
    task_topic_plans,
)


def tasks_experiment(ctx: Context, settings: TasksSettings) -> TasksResult:
    data, counts = ctx.dataset(), settings.counts
    found: dict[str, list[TasksRun]] = {str(count): [] for count in counts}
    notes: list[str] = []
    if settings.warmup_tasks:
        warmup, _ = tasks_run(ctx, count=settings.warmup_tasks)
        ctx.log(f"  warm-up, {settings.warmup_tasks} task(s), not counted: {warmup.seconds:.1f} s")
    for index in range(ctx.config.runs):
        for count in counts:
            run, run_notes = tasks_run(ctx, count=count)
            notes += run_notes
            found[str(count)].append(run)
            ctx.log(
                f"  {count} task(s) run {index + 1}: {run.seconds:.1f} s, "
                f"{run.completed}/{count} complete, {run.cpu_s:.1f} CPU s"
            )
    return TasksResult(
        mappers=ctx.config.mappers,
        reducers=ctx.config.reducers,
        records=data.records,
        counts=list(counts),
        shapes=[Shape(name=s.name, what=s.what, sql=s.sql(data.topic)) for s in SHAPES],
        by_count=with_time_ratios({c: count_summary(r) for c, r in found.items()}),
        notes=notes,
        warmup_tasks=settings.warmup_tasks,
    )


def tasks_run(ctx: Context, *, count: int) -> tuple[TasksRun, list[str]]:
    """One run of `count` tasks and its notes; their topics are deleted after it."""
    return shapes_run(ctx, shapes_for(count), label=f"tasks{count}")


def shapes_run(ctx: Context, shapes: list[TaskShape], *, label: str) -> tuple[TasksRun, list[str]]:
    """One run of a task per shape, registered at once (ids start with `label`), and its
    notes; their topics are deleted after it."""
    bench, data = ctx.bench, ctx.dataset()
    specs = [
        parse_task(shape.sql(data.topic), task_id=fresh_id(f"{label}-{i}-{shape.name}-"))
        for i, shape in enumerate(shapes)
    ]
    ensure_topics(
        bench.admin,
        [plan for spec in specs for plan in task_topic_plans(spec, bench.kafka)],
        Replication.of(bench.kafka),
    )
    try:
        return _measure(ctx, specs, shapes)
    finally:
        _delete_topics(bench, specs)


def _measure(
    ctx: Context, specs: list[TaskSpec], shapes: list[TaskShape]
) -> tuple[TasksRun, list[str]]:
    bench, data, config = ctx.bench, ctx.dataset(), ctx.config
    readers = {
        spec.output_topic: ResultReader(
            kafka=bench.kafka,
            topic=spec.output_topic,
            count_field=COUNT_FIELD,
            key_fields=tuple(key.name for key in spec.group_keys),
        )
        for spec in specs
    }
    completions = [Completion.of(spec, data) for spec in specs]
    with bench.run() as run:
        run.start_mappers(config.mappers)
        run.start_reducers(config.reducers)
        topics = TopicsReader(kafka=bench.kafka, readers=readers).start()
        started = time.time()
        run.register_many(specs)
        done = _wait_complete(specs, readers, completions, timeout_s=config.timeout_s)
        figures = run.figures()
        topics.stop()
    finished = [
        readers[spec.output_topic].completion_time_s(before_ms=completion.end_ms) - started
        for spec, completion in zip(specs, completions, strict=True)
    ]
    complete = all(done)
    seconds = max(finished) if complete else math.nan
    by_shape: dict[str, float] = {}
    for shape, elapsed in zip(shapes, finished, strict=True):
        by_shape[shape.name] = max(by_shape.get(shape.name, 0.0), elapsed)
    missing = [spec.id for spec, ok in zip(specs, done, strict=True) if not ok]
    found = TasksRun(
        tasks=len(specs),
        seconds=seconds,
        records_per_s=len(specs) * data.records / seconds if complete else math.nan,
        complete=complete,
        completed=sum(done),
        slowest_by_shape_s=by_shape,
        duplicates=sum(r.duplicates() for r in readers.values()),
        cpu_s=sum(f.cpu_s or 0.0 for fs in figures.values() for f in fs),
    )
    notes = [f"{len(missing)} of {len(specs)} tasks incomplete: {missing[:5]}"] if missing else []
    return found, notes


def _wait_complete(
    specs: list[TaskSpec],
    readers: dict[str, ResultReader],
    completions: list[Completion],
    *,
    timeout_s: float,
) -> list[bool]:
    """Until every task's results are all readable or `timeout_s`; which ones are."""
    done = [False] * len(specs)
    deadline = time.monotonic() + timeout_s
    while not all(done) and time.monotonic() < deadline:
        for index, (spec, completion) in enumerate(zip(specs, completions, strict=True)):
            if not done[index]:
                done[index] = completion.met(readers[spec.output_topic].snapshot())
        time.sleep(0.05)
    return done


def _delete_topics(bench: BenchCluster, specs: list[TaskSpec]) -> None:
    """The run's result, late and dead-letter topics, so later runs find the broker as before."""
    for spec in specs:
        try:
            delete_task_topics(bench.admin, spec, bench.kafka)
        except TopicError:  # left behind: costs the broker a little, not the measurement
            continue


@dataclass(frozen=True, slots=True)
class TasksSettings:
    # tasks registered at once over topic S; opt-in counts: MARS_TASKS_COUNTS=1,50
    counts: tuple[int, ...] = env_ints("MARS_TASKS_COUNTS", (1, 10, 50, 100))
    # One run of this many tasks first, not counted: the bench's broker starts with the
    # invocation, and its JIT compiled for about 6.5 CPU s across an invocation of the 1- and
    # 10-task runs, on the two cores the Mars processes share (0: none).
    warmup_tasks: int = 10
    QUICK: ClassVar[dict[str, object]] = {"counts": (1, 3), "warmup_tasks": 0}


class ManyTasks(Base[TasksSettings, TasksResult]):
    """Experiment 11 (the module's docstring)."""

    name = "tasks"
    title = "experiment 11, many tasks over one topic"
    sections = (Section(11, TASKS_HEADING),)
    uses_dataset = True
    settings_type = TasksSettings
    result_type = TasksResult

    def run(self, ctx: Context, settings: TasksSettings) -> TasksResult:
        return tasks_experiment(ctx, settings)

    def report(self, result: TasksResult | None, images: Mapping[str, str]) -> tuple[str, ...]:
        return (tasks_section(result),) if result else self.not_run()

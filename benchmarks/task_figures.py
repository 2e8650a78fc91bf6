"""The tasks experiment's arithmetic (pure): each task count's runs summed up, its time over
one task's, and the target ("10 tasks over one topic in <= 3x the time of one task")
checked against them."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from benchmarks.stats import Summary, ratio
from benchmarks.targets import TASKS_TARGET_COUNT, TASKS_TIME_RATIO_TARGET


@dataclass(frozen=True, slots=True, kw_only=True)
class TasksRun:
    """One run of `tasks` tasks: seconds until every task's results were readable, the
    records processed per second (tasks x records over the seconds), how many completed,
    the slowest task per shape (seconds), rows emitted twice and the Mars CPU seconds."""

    tasks: int = 0
    seconds: float = math.nan
    records_per_s: float = math.nan
    complete: bool = False
    completed: int = 0
    slowest_by_shape_s: dict[str, float] = field(default_factory=dict)
    duplicates: int = 0
    cpu_s: float = math.nan


@dataclass(frozen=True, slots=True, kw_only=True)
class CountFigures:
    """One task count's runs summed up (NaN where a run did not complete), its median
    seconds over one task's (`time_ratio`) and run i's over run i of one task."""

    runs: list[TasksRun] = field(default_factory=list)
    seconds: Summary = field(default_factory=Summary)
    records_per_s: Summary = field(default_factory=Summary)
    cpu_s: Summary = field(default_factory=Summary)
    time_ratio: float = math.nan
    time_ratio_runs: list[float] = field(default_factory=list)


@dataclass(frozen=True, slots=True, kw_only=True)
class Shape:
    name: str = ""
    what: str = ""
    sql: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class TasksResult:
    """Experiment 11: the processes, the topic's records, the task counts and shapes, and
    each count's figures (`by_count`, keyed by the count)."""

    mappers: int = 0
    reducers: int = 0
    records: int = 0
    counts: list[int] = field(default_factory=list)
    shapes: list[Shape] = field(default_factory=list)
    by_count: dict[str, CountFigures] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    warmup_tasks: int = 0  # the tasks of the run before the measured ones, not counted


@dataclass(frozen=True, slots=True, kw_only=True)
class StatisticsResult:
    """Experiment 13: the processes, the topic's records, the two shapes and each one's runs
    summed up (`by_shape`, keyed by the shape's name; the first is the plain query)."""

    mappers: int = 0
    reducers: int = 0
    records: int = 0
    shapes: list[Shape] = field(default_factory=list)
    by_shape: dict[str, CountFigures] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def count_summary(runs: Sequence[TasksRun]) -> CountFigures:
    """One task count's runs summed up (`time_ratio` comes from `with_time_ratios`)."""

    def complete(name: str) -> Summary:
        return Summary.of([float(getattr(r, name)) if r.complete else math.nan for r in runs])

    return CountFigures(
        runs=list(runs),
        seconds=complete("seconds"),
        records_per_s=complete("records_per_s"),
        cpu_s=complete("cpu_s"),
    )


def with_time_ratios(by_count: Mapping[str, CountFigures]) -> dict[str, CountFigures]:
    """`by_count` with each count's `time_ratio` and `time_ratio_runs` (runs are
    interleaved, so run i of each count met the same load). NaN without a 1-task point."""
    one = by_count.get("1")
    one_median = one.seconds.median if one else math.nan
    one_runs = [r.seconds for r in one.runs] if one else []
    return {
        count: replace(
            summary,
            time_ratio=ratio(summary.seconds.median, one_median),
            time_ratio_runs=[
                ratio(r.seconds, o) for r, o in zip(summary.runs, one_runs, strict=False)
            ],
        )
        for count, summary in by_count.items()
    }


@dataclass(frozen=True, slots=True, kw_only=True)
class TasksVerdict:
    """The target: `tasks` tasks over one topic in at most `goal` times the time of one task;
    `measured` is the ratio of the medians (NaN when this run has no such point)."""

    tasks: int
    goal: float
    measured: float

    @property
    def met(self) -> bool | None:
        return None if math.isnan(self.measured) else self.measured <= self.goal

    @property
    def missed_by(self) -> float:
        """How far over the goal the ratio is (0 when met, NaN when not measured)."""
        return max(self.measured - self.goal, 0.0) if self.met is not None else math.nan

    def text(self) -> str:
        target = f"{self.tasks} tasks over one topic in <= {self.goal:g}x the time of one task"
        if self.met is None:
            return f"Target: {target}: **not measured** (this run has no {self.tasks}-task point)."
        found = f"{self.tasks} tasks took **{self.measured:.2f}x** the time of one"
        if self.met:
            return f"Target: {target}: **met**; {found}."
        over = self.missed_by / self.goal
        return (
            f"Target: {target}: **missed** by {self.missed_by:.2f}x ({over:.0%} over the "
            f"{self.goal:g}x allowed); {found}."
        )


def tasks_verdict(found: TasksResult | None) -> TasksVerdict:
    """The target checked against the results of the tasks experiment."""
    point = found.by_count.get(str(TASKS_TARGET_COUNT)) if found else None
    return TasksVerdict(
        tasks=TASKS_TARGET_COUNT,
        goal=TASKS_TIME_RATIO_TARGET,
        measured=point.time_ratio if point else math.nan,
    )

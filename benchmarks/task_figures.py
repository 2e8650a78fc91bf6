"""The tasks experiment's arithmetic (pure): each task count's runs summed up, its time over
one task's, and the issue's target ("10 tasks over one topic in <= 4x the time of one task")
checked against them."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from benchmarks.stats import ratio, summarize
from benchmarks.targets import TASKS_TARGET_COUNT, TASKS_TIME_RATIO_TARGET


def count_summary(runs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One task count's runs: seconds, records processed per second (tasks x records over
    the seconds) and CPU seconds of the mappers + reducers (NaN where a run did not
    complete)."""

    def complete(name: str) -> list[float]:
        return [float(r[name]) if r["complete"] else math.nan for r in runs]

    return {
        "runs": list(runs),
        "seconds": summarize(complete("seconds")),
        "records_per_s": summarize(complete("records_per_s")),
        "cpu_s": summarize(complete("cpu_s")),
    }


def with_time_ratios(by_count: Mapping[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """`by_count` (task count -> `count_summary`) with each count's `time_ratio`: its median
    seconds over one task's, and `time_ratio_runs`: run i's seconds over run i of one task
    (runs are interleaved, so run i of each count met the same load). NaN without a 1-task
    point."""
    one = by_count.get("1")
    one_median = one["seconds"]["median"] if one else math.nan
    one_runs = [r["seconds"] for r in one["runs"]] if one else []
    found = {}
    for count, summary in by_count.items():
        seconds = [r["seconds"] for r in summary["runs"]]
        found[count] = {
            **summary,
            "time_ratio": ratio(summary["seconds"]["median"], one_median),
            "time_ratio_runs": [ratio(s, o) for s, o in zip(seconds, one_runs, strict=False)],
        }
    return found


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


def tasks_verdict(found: Mapping[str, Any] | None) -> TasksVerdict:
    """The target checked against the results of the tasks experiment."""
    point = ((found or {}).get("by_count") or {}).get(str(TASKS_TARGET_COUNT)) or {}
    measured = point.get("time_ratio", math.nan)
    return TasksVerdict(
        tasks=TASKS_TARGET_COUNT,
        goal=TASKS_TIME_RATIO_TARGET,
        measured=float(measured) if isinstance(measured, int | float) else math.nan,
    )

"""Experiment 10's arithmetic (pure): one pre-aggregation mode's phases from the task's
`records_in` progress and its processes' CPU seconds, and the mappers over the Spark stream.

Every time is measured from the mode's launch (its processes started): start-up until the first
record is applied, the *steady* part from the first sample at `low` of the records until all
are applied (Spark's first micro-batch takes the whole preloaded topic, so its plan and its
executors' start fall in the start-up, not in the steady part).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from benchmarks.stats import ProgressSample, ratio

STEADY_FROM = 0.1  # the steady part starts when 10 % of the records are applied
CpuSample = tuple[float, float]  # (monotonic time, CPU seconds of the mode's processes)
_TALLY = re.compile(r"stopped after (\d+) micro-batch(?:es)?\b")


def steady_span(
    samples: Sequence[ProgressSample], *, target: int, low: float = STEADY_FROM
) -> tuple[ProgressSample, ProgressSample] | None:
    """The first sample with at least `low` of `target` applied and the first with all of it;
    None when the run did not apply everything or both are the same sample."""
    start = next((s for s in samples if s.done >= low * target), None)
    end = next((s for s in samples if s.done >= target), None)
    if start is None or end is None or end.t <= start.t:
        return None
    return start, end


def cpu_at(cpu: Sequence[CpuSample], t: float) -> float:
    """The CPU seconds of the last sample at or before `t` (the first sample if none is),
    minus the first sample's: the CPU the mode's processes used since sampling began."""
    if not cpu:
        return math.nan
    before = [value for at, value in cpu if at <= t]
    return (before[-1] if before else cpu[0][1]) - cpu[0][1]


@dataclass(frozen=True, slots=True, kw_only=True)
class ModeFigures:
    """One mode's run (seconds from its launch; NaN for what the run did not reach): the
    whole run, its start-up and its steady part; for the Spark stream also its executors'
    CPU, its micro-batches, its exit code and log (the log's tail when incomplete)."""

    complete: bool = False
    records_in: int = 0
    startup_s: float = math.nan
    seconds: float = math.nan
    records_per_s: float = math.nan
    cpu_s: float = math.nan
    records_per_cpu_s: float = math.nan
    steady_from_s: float = math.nan
    steady_records_per_s: float = math.nan
    steady_cpu_s: float = math.nan
    steady_records_per_cpu_s: float = math.nan
    executors_cpu_s: float | None = None
    micro_batches: int | None = None
    exit_code: int | None = None
    log: str | None = None
    log_tail: str | None = None


RATIOS = ("records_per_s", "steady_records_per_s", "records_per_cpu_s", "steady_records_per_cpu_s")


def mode_phases(
    samples: Sequence[ProgressSample],
    cpu: Sequence[CpuSample],
    *,
    launched: float,
    target: int,
) -> ModeFigures:
    """Start-up, steady part and whole run of one mode (seconds from `launched`)."""
    first = next((s for s in samples if s.done > 0), None)
    span = steady_span(samples, target=target)
    complete = bool(samples) and samples[-1].done >= target
    end_t = samples[-1].t if complete else math.nan
    seconds = end_t - launched
    cpu_s = cpu_at(cpu, end_t) if complete else math.nan
    found = ModeFigures(
        complete=complete,
        records_in=samples[-1].done if samples else 0,
        startup_s=first.t - launched if first is not None else math.nan,
        seconds=seconds,
        records_per_s=ratio(target, seconds) if complete else math.nan,
        cpu_s=cpu_s,
        records_per_cpu_s=ratio(target, cpu_s) if complete else math.nan,
    )
    if span is None:
        return found
    start, end = span
    steady_cpu = cpu_at(cpu, end.t) - cpu_at(cpu, start.t)
    return replace(
        found,
        steady_from_s=start.t - launched,
        steady_records_per_s=(end.done - start.done) / (end.t - start.t),
        steady_cpu_s=steady_cpu,
        steady_records_per_cpu_s=ratio(end.done - start.done, steady_cpu),
    )


def mode_ratios(mappers: ModeFigures, spark: ModeFigures) -> dict[str, float]:
    """The mappers' figures over the Spark stream's (above 1: the mappers are faster)."""
    return {name: ratio(getattr(mappers, name), getattr(spark, name)) for name in RATIOS}


def micro_batches(log_text: str) -> int | None:
    """How many micro-batches `mars spark stream` ran, from the line it prints when stopped."""
    found = _TALLY.findall(log_text)
    return int(found[-1]) if found else None

"""Experiment 7's pure parts: one run's memory figures, their medians per window length, and
how the longest window's figures compare with the shortest's (does state grow with the
window length?)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from benchmarks.stats import MemorySample, Summary, ratio, steady_level, summaries

STATE_WINDOWS_S = (60, 600, 3600)
FIGURES = (
    "redis_state_peak_mb",
    "redis_state_steady_mb",
    "reducer_peak_rss_mb",
    "reducer_steady_rss_mb",
)


def window_label(window_s: int) -> str:
    """60 -> '1 min', 600 -> '10 min', 3600 -> '1 h', 90 -> '90 s'."""
    if window_s % 3600 == 0:
        return f"{window_s // 3600} h"
    if window_s % 60 == 0:
        return f"{window_s // 60} min"
    return f"{window_s} s"


def run_figures(
    samples: Sequence[MemorySample], *, redis_idle_mb: float, reducer_peak_rss_mb: float | None
) -> dict[str, float]:
    """Peak and steady level (median of the second half) of one run's samples. Redis counts
    above the idle server (`redis_idle_mb`, read just before the traffic): the task's state.
    The reducer's peak is its VmHWM when known (it sees between the samples), else the
    largest sample; samples without the reducer (it was gone) are left out."""
    redis = [s.redis_mb - redis_idle_mb for s in samples]
    rss = [s.rss_mb for s in samples if s.rss_mb > 0]
    peak_rss = reducer_peak_rss_mb if reducer_peak_rss_mb else max(rss, default=math.nan)
    return {
        "redis_state_peak_mb": max(redis, default=math.nan),
        "redis_state_steady_mb": steady_level(redis),
        "reducer_peak_rss_mb": peak_rss,
        "reducer_steady_rss_mb": steady_level(rss),
    }


def per_second(samples: Sequence[MemorySample], *, step_s: float = 1.0) -> dict[str, list[float]]:
    """The largest sample of each `step_s` step (for the results file and the plot), as
    parallel lists `t_s` (the step's start), `redis_mb`, `rss_mb`."""
    steps: dict[int, tuple[float, float]] = {}
    for sample in samples:
        index = int(sample.t_s // step_s)
        redis, rss = steps.get(index, (-math.inf, -math.inf))
        steps[index] = (max(redis, sample.redis_mb), max(rss, sample.rss_mb))
    ordered = sorted(steps.items())
    return {
        "t_s": [round(index * step_s, 3) for index, _ in ordered],
        "redis_mb": [round(redis, 3) for _, (redis, _) in ordered],
        "rss_mb": [round(rss, 3) for _, (_, rss) in ordered],
    }


@dataclass(frozen=True, slots=True, kw_only=True)
class StateRun:
    """One window length's run: what was produced and read, the idle levels read just
    before the traffic, its `FIGURES` (`run_figures`) and the per-second samples (`series`,
    for the plot)."""

    window_s: int = 0
    produced: int = 0
    records_in: int = 0
    windows_emitted: int = 0
    redis_idle_mb: float = math.nan
    reducer_idle_rss_mb: float = math.nan
    redis_state_peak_mb: float = math.nan
    redis_state_steady_mb: float = math.nan
    reducer_peak_rss_mb: float = math.nan
    reducer_steady_rss_mb: float = math.nan
    series: dict[str, list[float]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class WindowFigures:
    """One window length's runs and each figure's summary over them."""

    runs: list[StateRun] = field(default_factory=list)
    redis_state_peak_mb: Summary = field(default_factory=Summary)
    redis_state_steady_mb: Summary = field(default_factory=Summary)
    reducer_peak_rss_mb: Summary = field(default_factory=Summary)
    reducer_steady_rss_mb: Summary = field(default_factory=Summary)
    redis_idle_mb: Summary = field(default_factory=Summary)
    reducer_idle_rss_mb: Summary = field(default_factory=Summary)

    @classmethod
    def of(cls, runs: Sequence[StateRun]) -> WindowFigures:
        names = (*FIGURES, "redis_idle_mb", "reducer_idle_rss_mb")
        return cls(runs=list(runs), **summaries(runs, *names))


def summarize_windows(runs: Mapping[int, Sequence[StateRun]]) -> dict[str, WindowFigures]:
    """Window length (s) -> its runs -> per window length (key: str(s)) its figures."""
    return {str(window_s): WindowFigures.of(found) for window_s, found in runs.items()}


def growth(by_window: Mapping[str, WindowFigures]) -> dict[str, Any]:
    """The longest window's median over the shortest's, per figure (NaN when not measured,
    or fewer than two window lengths were): 1 when state does not depend on the window
    length."""
    lengths = sorted(int(w) for w in by_window)
    if len(lengths) < 2:
        lengths = [STATE_WINDOWS_S[0], STATE_WINDOWS_S[-1]]
    shortest, longest = lengths[0], lengths[-1]

    def median_of(window_s: int, name: str) -> float:
        found = by_window.get(str(window_s))
        return float(getattr(found, name).median) if found else math.nan

    return {
        "shortest_s": shortest,
        "longest_s": longest,
        **{name: ratio(median_of(longest, name), median_of(shortest, name)) for name in FIGURES},
    }

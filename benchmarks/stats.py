"""Pure arithmetic of the benchmarks: medians, percentiles, ratios, steady-state rates."""

from __future__ import annotations

import math
import statistics
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True, slots=True, kw_only=True)
class ProgressSample:
    """A cumulative count (records done) observed at wall time `t` (seconds)."""

    t: float
    done: int


@dataclass(frozen=True, slots=True, kw_only=True)
class MemorySample:
    """Redis `used_memory` and the watched processes' resident set (MiB, summed), observed
    `t_s` seconds after sampling started."""

    t_s: float
    redis_mb: float
    rss_mb: float


def median(values: Sequence[float]) -> float:
    """The median; NaN for no values (a missing measurement stays visible in the report)."""
    return float(statistics.median(values)) if values else math.nan


def medians_by(pairs: Iterable[tuple[K, float]]) -> dict[K, float]:
    """The median of the values of each key, over `(key, value)` pairs: one figure per key
    from repeated runs."""
    grouped: dict[K, list[float]] = {}
    for key, value in pairs:
        grouped.setdefault(key, []).append(value)
    return {key: median(values) for key, values in grouped.items()}


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100) by linear interpolation between closest ranks."""
    if not values:
        return math.nan
    if not 0 <= q <= 100:
        raise ValueError(f"percentile must be in [0, 100], got {q}")
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def steady_level(values: Sequence[float], *, tail: float = 0.5) -> float:
    """The median of the last `tail` share of a series (in time order): the level a run
    settled at, start-up left out; NaN for no values."""
    if not values:
        return math.nan
    return median(values[int(len(values) * (1 - tail)) :])


def ratio(numerator: float, denominator: float) -> float:
    """numerator / denominator, NaN when either is missing or the denominator is not > 0."""
    if math.isnan(numerator) or math.isnan(denominator) or denominator <= 0:
        return math.nan
    return numerator / denominator


def bytes_per_added(low: tuple[int, float], high: tuple[int, float]) -> float:
    """Bytes of growth per item added between two runs, each (items, MiB): the cost that grows
    with the items, without the fixed cost the smaller run already paid; NaN unless `high` has
    more items."""
    (low_items, low_mb), (high_items, high_mb) = low, high
    return ratio((high_mb - low_mb) * 1024**2, high_items - low_items)


def steady_rate(samples: Sequence[ProgressSample], *, low: float = 0.1, high: float = 0.9) -> float:
    """Records per second between the first sample past `low` and the last one below `high`
    of the final count: start-up (group join, first fetch) and the tail are left out.

    Falls back to first-progress -> last sample when too few samples fall inside the band.
    """
    if not samples:
        return math.nan
    total = samples[-1].done
    if total <= 0:
        return 0.0
    inside = [s for s in samples if low * total <= s.done <= high * total]
    if len(inside) >= 2 and inside[-1].t > inside[0].t:
        first, last = inside[0], inside[-1]
    else:
        moving = [s for s in samples if s.done > 0]
        before = [s for s in samples if s.done == 0]
        first = before[-1] if before else moving[0]
        last = samples[-1]
    elapsed = last.t - first.t
    return (last.done - first.done) / elapsed if elapsed > 0 else math.nan


def merged_progress(workers: Sequence[Sequence[tuple[float, int]]]) -> list[ProgressSample]:
    """Several workers' cumulative `(t, done)` progress as one cumulative progress (pure)."""
    steps: list[tuple[float, int]] = []
    for progress in workers:
        previous = 0
        for t, done in progress:
            steps.append((t, done - previous))
            previous = done
    merged, total = [], 0
    for t, delta in sorted(steps):
        total += delta
        merged.append(ProgressSample(t=t, done=total))
    return merged


def first_to_last_rate(samples: Sequence[ProgressSample]) -> float:
    """Records per second from the last sample with nothing done to the final sample."""
    if not samples or samples[-1].done <= 0:
        return math.nan
    before = [s for s in samples if s.done == 0]
    start = before[-1] if before else samples[0]
    elapsed = samples[-1].t - start.t
    return (samples[-1].done - start.done) / elapsed if elapsed > 0 else math.nan


@dataclass(frozen=True, slots=True, kw_only=True)
class Summary:
    """A measurement: every run, and the median, min and max of those that are not NaN (a
    failed run does not poison the others; NaN when none was measured)."""

    runs: list[float] = field(default_factory=list)
    median: float = math.nan
    min: float = math.nan
    max: float = math.nan

    @classmethod
    def of(cls, values: Sequence[float]) -> Summary:
        real = [v for v in values if not math.isnan(v)]
        low, high = (min(real), max(real)) if real else (math.nan, math.nan)
        return cls(runs=list(values), median=median(real), min=low, max=high)


def summaries(runs: Sequence[Any], *names: str) -> dict[str, Any]:
    """Each figure in `names` summed up over `runs` (mappings or objects that have it): a
    `Summary` by name, for a result's constructor."""
    return {
        name: Summary.of([r[name] if isinstance(r, Mapping) else getattr(r, name) for r in runs])
        for name in names
    }


def summarize(values: Sequence[float]) -> dict[str, float | list[float]]:
    """JSON form of a measurement (`Summary`)."""
    found = Summary.of(values)
    return {"runs": found.runs, "median": found.median, "min": found.min, "max": found.max}

"""Experiment 7's pure parts (memory vs window length): figures of a run, the 1 h / 1 min
ratios, the targets and the report's section, from made-up sample series."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from benchmarks.codec import to_json
from benchmarks.plots import plot_all
from benchmarks.report import render_report
from benchmarks.state_figures import (
    StateRun,
    growth,
    per_second,
    run_figures,
    summarize_windows,
    window_label,
)
from benchmarks.stats import MemorySample, steady_level
from benchmarks.targets import check_targets

IDLE_MB = 1.0


def _samples(
    redis_above_idle: Callable[[int], float], rss: Callable[[int], float], *, seconds: int = 120
) -> list[MemorySample]:
    """One sample a second for `seconds`, Redis and RSS as functions of the second."""
    return [
        MemorySample(t_s=float(t), redis_mb=IDLE_MB + redis_above_idle(t), rss_mb=rss(t))
        for t in range(seconds)
    ]


def _sawtooth(t: int) -> float:  # a 1 min window: its data sets go when it closes
    return (t % 60) * 0.5


def _growing(t: int) -> float:  # a 1 h window: nothing closes in the run
    return t * 0.5


def _run(window_s: int, samples: list[MemorySample], peak_rss: float) -> StateRun:
    return StateRun(
        window_s=window_s,
        produced=480_000,
        records_in=480_000,
        windows_emitted=2 if window_s == 60 else 0,
        redis_idle_mb=IDLE_MB,
        reducer_idle_rss_mb=150.0,
        **run_figures(samples, redis_idle_mb=IDLE_MB, reducer_peak_rss_mb=peak_rss),
        series=per_second(samples),
    )


def _windows(
    long_redis: Callable[[int], float] = _growing, long_peak_rss: float = 210.0
) -> dict[int, list[StateRun]]:
    return {
        60: [_run(60, _samples(_sawtooth, lambda t: 200.0), 205.0)],
        600: [_run(600, _samples(_growing, lambda t: 200.0), 207.0)],
        3600: [_run(3600, _samples(long_redis, lambda t: 200.0 + t / 60), long_peak_rss)],
    }


def _state(
    long_redis: Callable[[int], float] = _growing, long_peak_rss: float = 210.0
) -> dict[str, Any]:
    by_window = summarize_windows(_windows(long_redis, long_peak_rss))
    state = {
        "rate": 4000.0,
        "duration_s": 120,
        "sips": 250,
        "groups": 2000,
        "mappers": 2,
        "reducers": 1,
        "windows_s": [60, 600, 3600],
        "by_window": by_window,
        "growth": growth(by_window),
    }
    found_json: dict[str, Any] = to_json(state)  # as the results file keeps it
    return found_json


def test_window_labels() -> None:
    assert [window_label(w) for w in (60, 600, 3600, 7200, 90)] == [
        "1 min",
        "10 min",
        "1 h",
        "2 h",
        "90 s",
    ]


def test_steady_level_is_the_median_of_the_second_half() -> None:
    assert steady_level([0.0, 0.0, 10.0, 20.0]) == 15.0
    assert steady_level([1.0, 2.0, 3.0]) == 2.5  # the last two of three
    assert steady_level([4.0]) == 4.0
    assert math.isnan(steady_level([]))


def test_run_figures_count_redis_above_idle_and_prefer_vmhwm() -> None:
    figures = run_figures(
        _samples(_sawtooth, lambda t: 200.0), redis_idle_mb=IDLE_MB, reducer_peak_rss_mb=205.0
    )
    assert figures["redis_state_peak_mb"] == pytest.approx(29.5)  # 59 s of data sets
    assert figures["redis_state_steady_mb"] == pytest.approx(14.75)  # median of 0..29.5
    assert figures["reducer_peak_rss_mb"] == 205.0
    assert figures["reducer_steady_rss_mb"] == 200.0
    # without VmHWM the largest sample; samples taken when the reducer was gone are left out
    gone = _samples(_sawtooth, lambda t: 0.0 if t > 100 else 180.0 + t / 10)
    figures = run_figures(gone, redis_idle_mb=IDLE_MB, reducer_peak_rss_mb=None)
    assert figures["reducer_peak_rss_mb"] == pytest.approx(190.0)
    nothing = run_figures([], redis_idle_mb=IDLE_MB, reducer_peak_rss_mb=None)
    assert all(math.isnan(v) for v in nothing.values())


def test_per_second_keeps_the_largest_sample_of_each_second() -> None:
    samples = [
        MemorySample(t_s=0.0, redis_mb=1.0, rss_mb=100.0),
        MemorySample(t_s=0.5, redis_mb=3.0, rss_mb=99.0),
        MemorySample(t_s=0.9, redis_mb=2.0, rss_mb=101.0),
        MemorySample(t_s=2.1, redis_mb=5.0, rss_mb=102.0),
    ]
    assert per_second(samples) == {
        "t_s": [0.0, 2.0],
        "redis_mb": [3.0, 5.0],
        "rss_mb": [101.0, 102.0],
    }


def test_growth_is_the_longest_window_over_the_shortest() -> None:
    found = growth(summarize_windows(_windows()))
    assert (found["shortest_s"], found["longest_s"]) == (60, 3600)
    assert found["redis_state_peak_mb"] == pytest.approx(59.5 / 29.5)
    assert found["redis_state_steady_mb"] == pytest.approx(44.75 / 14.75)
    assert found["reducer_peak_rss_mb"] == pytest.approx(210 / 205)
    # bounded state: the 1 h window holds what the 1 min one does
    bounded = growth(summarize_windows(_windows(long_redis=_sawtooth)))
    assert bounded["redis_state_peak_mb"] == pytest.approx(1.0)
    # one window length measured (the others failed): nothing to compare
    alone = growth({"60": summarize_windows(_windows())["60"]})
    assert math.isnan(alone["redis_state_peak_mb"])


def test_state_targets_redis_and_reducer_within_one_and_a_half() -> None:
    rows = {row.name: row for row in check_targets({"state": _state(long_peak_rss=400.0)})}
    redis = rows[
        "Redis memory held by the task (peak above idle), 1 h vs 1 min windows "
        "(same rate and groups)"
    ]
    assert redis.target == "<= 1.5x" and redis.measured == "2.02x" and redis.met is False
    assert redis.of_goal == pytest.approx(1.5 / (59.5 / 29.5))
    reducer = rows["reducer peak RSS, 1 h vs 1 min windows (same rate and groups)"]
    assert reducer.measured == "1.95x" and reducer.met is False  # 400 / 205
    bounded = check_targets({"state": _state(long_redis=_sawtooth)})
    assert [row.met for row in bounded[-2:]] == [True, True]
    missing = check_targets({})
    assert [row.verdict for row in missing[-2:]] == ["not measured", "not measured"]
    assert "1 h vs 1 min windows" in missing[-1].name


def test_report_renders_the_state_section(tmp_path: Path) -> None:
    results = {"machine": {"nproc": 2}, "state": _state()}
    images = {k: f"img/{v.name}" for k, v in plot_all(results, tmp_path).items()}
    assert images == {"state": "img/bench_state.png"}
    assert (tmp_path / "bench_state.png").stat().st_size > 0
    text = render_report(results, images=images)
    assert "## 7. Memory vs window length (bounded state)" in text
    assert "(1 min, 10 min, 1 h; 1 run each, interleaved)" in text
    assert "4,000 records/s for 120 s (480,000 records)" in text
    assert "2,000 groups (250 sips x 8 types" in text
    assert "| 1 min | 29.5 | 14.8 | 205 | 200 | 2 | 480,000 |" in text
    assert "| 1 h | 59.5 | 44.8 | 210 | 201 | 0 | 480,000 |" in text
    assert "| **1 h / 1 min** | 2.02x | 3.03x | 1.02x | 1.01x | | |" in text
    assert "Redis used_memory 1.0 MiB, reducer RSS 150 MiB." in text
    assert "![memory over time per window length](img/bench_state.png)" in text
    assert "| Redis memory held by the task (peak above idle), 1 h vs 1 min windows" in text
    assert "too short" not in text
    assert "Not run." in render_report({"machine": {}}, images={}).split("## 7.")[1]
    state = _state()
    state["by_window"]["3600"]["redis_idle_mb"]["median"] = 1.5  # the idle server grew
    assert "Redis used_memory 1.0–1.5 MiB" in render_report({"state": state}, images={})
    quick = render_report({"state": {**_state(), "duration_s": 30}}, images={})
    assert "**This run is too short to tell bounded from growing state**: in 30 s" in quick

"""Experiment 8's pure parts (pull queries): answers summed up, phases and per-query cost from
snapshots, reducer commits from Prometheus text, the report's section, and a run of some
experiments merged into an earlier report."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

import pytest

from benchmarks.codec import to_json
from benchmarks.exp_pull_query import run_summary
from benchmarks.pull_figures import (
    Answer,
    Snapshot,
    answers_summary,
    bucket_quantile,
    commit_totals,
    per_query_cost,
    phase_figures,
)
from benchmarks.report import render_report
from benchmarks.report_merge import merge_report, split_sections
from benchmarks.report_pull import PULL_HEADING, size
from benchmarks.runner import NAMES, BenchConfig, write_report

METRICS = """\
# HELP mars_reducer_commit_duration_seconds One Kafka transaction commit.
# TYPE mars_reducer_commit_duration_seconds histogram
mars_reducer_commit_duration_seconds_bucket{le="0.01",task="pull-a"} 3.0
mars_reducer_commit_duration_seconds_bucket{le="+Inf",task="pull-a"} 4.0
mars_reducer_commit_duration_seconds_count{task="pull-a"} 4.0
mars_reducer_commit_duration_seconds_sum{task="pull-a"} 0.05
mars_reducer_commit_duration_seconds_count{task="other"} 9.0
mars_reducer_commit_duration_seconds_sum{task="other"} 7.0
# HELP mars_reducer_windows_emitted_total Windows closed and committed.
# TYPE mars_reducer_windows_emitted_total counter
mars_reducer_windows_emitted_total{task="pull-a"} 2.0
"""


def _answers(latencies_ms: list[float], *, rows: int, body: int) -> list[Answer]:
    return [
        Answer(latency_s=ms / 1000, body_bytes=body, rows=rows, staleness_ms=int(ms) * 10)
        for ms in latencies_ms
    ]


def _snapshot(t: float, **figures: Any) -> Snapshot:
    base: dict[str, Any] = {
        "records_in": 0,
        "api_cpu_s": 0.0,
        "pipeline_cpu_s": 0.0,
        "redis_out_bytes": 0,
        "commit_s": 0.0,
        "commits": 0,
    }
    return Snapshot(t=t, **{**base, **figures})


def test_answers_summary_gives_percentiles_in_ms_and_the_median_body() -> None:
    answers = _answers([float(v) for v in range(1, 101)], rows=1, body=300)
    answers.append(Answer(latency_s=0.5, body_bytes=900, rows=1, staleness_ms=None))
    found = answers_summary(answers, seconds=10.1)
    assert found["queries"] == 101
    assert found["queries_per_s"] == pytest.approx(10.0)
    assert found["p50_ms"] == pytest.approx(51.0)
    assert found["max_ms"] == pytest.approx(500.0)
    assert found["body_bytes"] == 300
    assert found["staleness_p50_ms"] == pytest.approx(505.0)
    assert found["staleness_max_ms"] == 1000
    assert found["unknown_staleness"] == 1
    empty = answers_summary([], seconds=1.0)
    assert empty["queries"] == 0 and math.isnan(empty["p99_ms"])


def test_per_query_cost_is_what_the_queries_added_to_the_idle_rates() -> None:
    idle = phase_figures(
        _snapshot(0.0),
        _snapshot(10.0, records_in=40_000, api_cpu_s=0.1, redis_out_bytes=1_000_000),
    )
    assert idle["records_per_s"] == 4000
    assert idle["api_cpu_per_s"] == pytest.approx(0.01)
    busy = phase_figures(
        _snapshot(10.0, commit_s=1.0, commits=10),
        _snapshot(20.0, api_cpu_s=0.5, redis_out_bytes=3_000_000, commit_s=1.6, commits=40),
    )
    assert busy["commits"] == 30
    assert busy["commit_mean_ms"] == pytest.approx(20.0)
    cost = per_query_cost(busy, idle, queries=200)
    assert cost["api_cpu_ms_per_query"] == pytest.approx((0.5 - 0.1) / 200 * 1000)
    assert cost["redis_out_bytes_per_query"] == pytest.approx(2_000_000 / 200)
    assert math.isnan(per_query_cost(busy, idle, queries=0)["api_cpu_ms_per_query"])


def test_commit_totals_read_only_the_tasks_commit_histogram() -> None:
    assert commit_totals(METRICS, "pull-a") == (
        pytest.approx(0.05),
        4,
        {0.01: 3, math.inf: 4},
    )
    assert commit_totals(METRICS, "missing") == (0.0, 0, {})


def test_bucket_quantile_is_the_bound_that_enough_commits_stay_under() -> None:
    buckets = {0.01: 90, 0.025: 99, 0.1: 99, math.inf: 100}
    assert bucket_quantile(buckets, 50) == 0.01
    assert bucket_quantile(buckets, 99) == 0.025
    assert bucket_quantile(buckets, 100) == math.inf
    assert math.isnan(bucket_quantile({0.01: 0, math.inf: 0}, 50))
    phase = phase_figures(
        _snapshot(0.0, commit_buckets={0.01: 10, 5.0: 10, math.inf: 10}, commits=10),
        _snapshot(1.0, commit_buckets={0.01: 49, 5.0: 50, math.inf: 50}, commits=50, commit_s=5.0),
    )  # 40 commits, one of them slow: the mean moves, the median does not
    assert phase["commit_mean_ms"] == pytest.approx(125.0)
    assert phase["commit_p50_ms_at_most"] == pytest.approx(10.0)
    assert phase["commit_p99_ms_at_most"] == pytest.approx(5000.0)


def _pull_results() -> dict[str, Any]:
    marks = [
        _snapshot(0.0),
        _snapshot(10.0, records_in=40_000, api_cpu_s=0.1, commit_s=0.5, commits=50),
        _snapshot(20.0, records_in=80_000, api_cpu_s=0.6, commit_s=1.1, commits=100),
        _snapshot(40.0, records_in=150_000, api_cpu_s=10.6, commit_s=2.5, commits=180),
    ]
    run = run_summary(
        sips=250,
        groups=2000,
        open_groups=1990,
        marks=marks,
        answers={
            "one_group": (_answers([2.0] * 199 + [9.0], rows=1, body=420), 10.0),
            "whole_window": (_answers([80.0] * 50, rows=2000, body=300_000), 20.0),
        },
        checkpoint_bytes=96 * 1024,
    )
    return {
        "rate": 4000.0,
        "window_s": 3600,
        "queries": 200,
        "query_rate": 20.0,
        "baseline_s": 10.0,
        "whole_cap_s": 20.0,
        "mappers": 2,
        "reducers": 1,
        "by_groups": {"2000": to_json(run)},
    }


def test_run_summary_compares_each_query_phase_with_the_one_without() -> None:
    run = _pull_results()["by_groups"]["2000"]
    assert run["queries"]["one_group"]["api_cpu_ms_per_query"] == pytest.approx(2.0)
    assert run["queries"]["whole_window"]["api_cpu_ms_per_query"] == pytest.approx(
        (10.0 - 0.01 * 20) / 50 * 1000
    )
    assert run["impact"]["one_group"]["records_per_s"] == pytest.approx(1.0)
    assert run["impact"]["whole_window"]["records_per_s"] == pytest.approx(3500 / 4000)
    assert run["impact"]["whole_window"]["commit_mean_ms"] == pytest.approx(17.5 / 10)


def test_report_renders_the_pull_section() -> None:
    text = render_report({"pull": _pull_results()}, images={})
    section = dict(split_sections(text))[PULL_HEADING]
    body = "\n".join(section)
    assert "WINDOWING 1 h" in body and "for at most 20 s" in body
    assert "| 2,000 | one group | 200 (20.0) | 2.0 ms | 2.0 ms | 9.0 ms | 1 | 420 B |" in body
    assert "| 2,000 | whole open window | 50 (2.5) | 80.0 ms |" in body
    assert "| 96.0 KiB |" in body
    assert "| 2,000 | no queries | 4,000 | 50 | 10.0 ms | — / — ms | 0.00 | 0.01 |" in body
    assert (
        "| whole open window, 2.5/s (paced at 20) | 3,500 (0.88x) |" in body and "(—x)" not in body
    )
    assert PULL_HEADING + "\n\nNot run." in render_report({}, images={})


def test_sizes_for_people() -> None:
    assert size(812) == "812 B"
    assert size(36_045) == "35.2 KiB"
    assert size(3_250_586) == "3.10 MiB"
    assert size(math.nan) == "—"


EARLIER = """# Benchmarks

## Machine and run

- command: `mars bench`

## Reading this run (hand-written)

kept as it is

## 7. Memory vs window length (bounded state)

old state figures

## Where a mapper spends its time, and what limits it

old profile
"""


def test_merge_replaces_or_adds_only_the_measured_sections() -> None:
    fresh = render_report({"pull": _pull_results()}, images={})
    merged = merge_report(EARLIER, fresh, headings=[PULL_HEADING], provenance="*from run B*")
    sections = dict(split_sections(merged))
    assert [h for h, _ in split_sections(merged)][-2:] == [
        PULL_HEADING,
        "## Where a mapper spends its time, and what limits it",
    ]  # added where the fresh report puts it: after 7, before the profile
    assert sections[PULL_HEADING][:3] == [PULL_HEADING, "", "*from run B*"]
    assert "kept as it is" in merged and "old state figures" in merged
    again = merge_report(merged, fresh, headings=[PULL_HEADING], provenance="*from run C*")
    assert again.count(PULL_HEADING) == 1
    assert "*from run C*" in again and "*from run B*" not in again


def test_a_run_of_some_experiments_keeps_the_other_sections(tmp_path: Path) -> None:
    config = dataclasses.replace(
        BenchConfig.build(quick=True, runs=None, experiments=("pull",), command="mars bench"),
        docs_path=tmp_path / "benchmarks.md",
        img_dir=tmp_path / "img",
    )
    results = {
        "command": "mars bench --experiments pull",
        "machine": {"date": "2026-11-23 06:00 UTC", "load_average": [0.1, 0.2, 0.3]},
        "code": {"commit": "abc1234"},
        "config": {"experiments": ["pull"]},
        "pull": _pull_results(),
    }
    config.docs_path.write_text(EARLIER)
    write_report(results, config)
    merged = config.docs_path.read_text()
    assert "old state figures" in merged and "old profile" in merged
    assert "Measured by `mars bench --experiments pull` on 2026-11-23 06:00 UTC" in merged
    assert "commit `abc1234`" in merged
    # a run of every experiment writes the whole report
    write_report({**results, "config": {"experiments": list(NAMES)}}, config)
    assert "old state figures" not in config.docs_path.read_text()

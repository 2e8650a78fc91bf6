"""The pure parts of `mars bench`: medians, rates, ratios, targets, watermark times, report."""

from __future__ import annotations

import math
from typing import Any

import pytest

from benchmarks.profile_reading import hot_frame_lines, inclusive_samples, top_functions
from benchmarks.report import render_report
from benchmarks.stats import (
    ProgressSample,
    first_to_last_rate,
    median,
    merged_progress,
    percentile,
    ratio,
    steady_rate,
    summarize,
)
from benchmarks.targets import check_targets
from benchmarks.watermark_times import crossing_times, watermark_passage
from mars.config import MAPPER_BATCH_SIZE


def test_median_and_summary_keep_every_run() -> None:
    assert median([3.0, 1.0, 2.0]) == 2.0
    assert median([4.0, 1.0, 2.0, 3.0]) == 2.5
    assert math.isnan(median([]))
    assert summarize([5.0, 1.0, 3.0]) == {
        "runs": [5.0, 1.0, 3.0],
        "median": 3.0,
        "min": 1.0,
        "max": 5.0,
    }
    # a failed run (NaN) does not poison the median of the others
    assert summarize([2.0, math.nan, 4.0])["median"] == 3.0


def test_percentile_interpolates_between_ranks() -> None:
    values = [float(v) for v in range(1, 101)]  # 1..100
    assert percentile(values, 50) == pytest.approx(50.5)
    assert percentile(values, 99) == pytest.approx(99.01)
    assert percentile([7.0], 99) == 7.0
    with pytest.raises(ValueError):
        percentile(values, 101)


def test_ratio_is_nan_when_a_side_is_missing() -> None:
    assert ratio(300.0, 100.0) == 3.0
    assert math.isnan(ratio(1.0, 0.0))
    assert math.isnan(ratio(math.nan, 1.0))


def test_steady_rate_leaves_out_start_up_and_tail() -> None:
    # 5 s of group join with nothing done, then 1,000 records/s, then a slow tail.
    samples = [ProgressSample(t=float(t), done=0) for t in range(5)]
    samples += [ProgressSample(t=5.0 + i, done=1000 * i) for i in range(1, 10)]
    samples.append(ProgressSample(t=30.0, done=10_000))
    assert steady_rate(samples) == pytest.approx(1000.0)
    # first-to-last counts the tail: 10,000 records from t=4 to t=30
    assert first_to_last_rate(samples) == pytest.approx(10_000 / 26)


def test_merged_progress_adds_the_workers_up_in_time_order() -> None:
    merged = merged_progress([[(1.0, 0), (3.0, 10), (5.0, 30)], [(2.0, 0), (4.0, 5)]])
    assert [(s.t, s.done) for s in merged] == [
        (1.0, 0),
        (2.0, 0),
        (3.0, 10),
        (4.0, 15),
        (5.0, 35),
    ]


def test_steady_rate_of_a_capped_run_uses_first_progress() -> None:
    samples = [ProgressSample(t=0.0, done=0), ProgressSample(t=1.0, done=0)]
    samples += [ProgressSample(t=2.0, done=50), ProgressSample(t=3.0, done=100)]
    # too few samples inside 10..90 %: from the last idle sample to the end
    assert steady_rate(samples) == pytest.approx(50.0)


def test_crossing_times_per_partition_and_watermark_passage() -> None:
    # (event ms, producer timestamp ms) in offset order; out-of-order events are fine
    p0 = [(1000, 10), (4000, 11), (5000, 12), (9000, 13), (10_500, 14)]
    p1 = [(2000, 20), (6000, 25), (11_000, 30)]
    ends = [5000, 10_000, 15_000]
    found0 = crossing_times(p0, ends)
    found1 = crossing_times(p1, ends)
    assert found0 == {5000: 12, 10_000: 14}
    assert found1 == {5000: 25, 10_000: 30}
    # the watermark (min over partitions) passes an end when the LAST partition crosses it;
    # 15,000 was crossed nowhere and is left out
    assert watermark_passage({0: found0, 1: found1}) == {5000: 25, 10_000: 30}


def _fake_results() -> dict[str, Any]:
    def summary(value: float) -> dict[str, Any]:
        return {"runs": [value], "median": value, "min": value, "max": value}

    return {
        "machine": {"nproc": 2, "cpu_model": "Fake CPU", "ram_gib": 8, "date": "2026-01-01"},
        "command": "mars bench --quick",
        "quick": True,
        "config": {"runs": 1},
        "dataset": {"records": 1000, "mean_bytes": 144.0, "mbytes": 0.144, "partitions": 4},
        "batch": {
            str(MAPPER_BATCH_SIZE): {
                "records_per_s": summary(50_000),
                "mb_per_s": summary(7.2),
                "records_per_cpu_s": summary(400_000),
                "records_read": [1000],
                "cap_s": None,
            }
        },
        "processes": {
            "2": {
                "records_per_s": summary(80_000),
                "mb_per_s": summary(11.5),
                "records_per_cpu_s": summary(300_000),
            }
        },
        "e2e": {
            "mappers": 2,
            "reducers": 1,
            "mars": {
                "runs": [],
                "seconds": summary(10),
                "records_per_s": summary(60_000),
                "cpu_s": summary(5),
            },
            "spark": {
                "runs": [{"session_start_s": 20.0}],
                "seconds": summary(40),
                "records_per_s": summary(15_000),
                "cpu_s": summary(30),
            },
            "ceiling": {
                "runs": [],
                "records_per_s": summary(100_000),
                "mb_per_s": summary(14.4),
                "records_per_cpu_s": summary(500_000),
            },
            "ceiling_native": {
                "runs": [],
                "records_per_s": summary(200_000),
                "mb_per_s": summary(28.8),
                "records_per_cpu_s": summary(1_000_000),
            },
            "memory": {
                "redis_peak_mb": summary(3),
                "mapper_peak_rss_mb": summary(170),
                "reducer_peak_rss_mb": summary(190),
                "spark_peak_rss_mb": summary(700),
            },
        },
        "latency": {
            "rate": 30_000,
            "window_s": 5,
            "duration_s": 60,
            "windows": 10,
            "p50_s": 0.3,
            "p99_s": 1.4,
            "max_s": 1.5,
            "latencies_s": [0.3] * 10,
            "lighter": {
                "rate": 15_000,
                "windows": 10,
                "p50_s": 0.2,
                "p99_s": 0.5,
                "max_s": 0.6,
                "latencies_s": [0.2] * 10,
            },
        },
    }


def test_targets_compare_medians_of_the_same_invocation() -> None:
    rows = {row.name.split(" (")[0]: row for row in check_targets(_fake_results())}
    speedup = rows["end-to-end throughput vs PySpark Structured Streaming"]
    assert speedup.measured == "4.00x" and speedup.met is True
    ceiling = rows["mapper throughput vs consume+decode ceiling"]
    assert ceiling.measured == "80%" and ceiling.met is True
    per_cpu_ceiling = rows["mapper vs ceiling, records per CPU-second"]
    assert per_cpu_ceiling.measured == "60%" and per_cpu_ceiling.met is False  # 300k / 500k
    native = rows["mapper vs the native consumer's ceiling, records per CPU-second"]
    assert native.measured == "30%" and native.met is False  # 300k / 1M
    per_core = rows["mapper MB/s per core"]
    assert per_core.measured == "7.2 MB/s" and per_core.met is False
    per_cpu = rows["mapper MB per CPU-second"]
    assert per_cpu.measured == "57.6 MB/s" and per_cpu.met is False  # 400k * 144 B
    latency = rows["window results readable after watermark passes end + grace"]
    assert latency.met is False and latency.measured == "1.400 s"


def test_missing_experiments_are_reported_as_not_measured() -> None:
    rows = check_targets({"machine": {}})
    assert all(row.met is None and row.verdict == "not measured" for row in rows)
    text = render_report({"machine": {}}, images={})
    assert text.count("Not run") >= 5


def test_report_shows_figures_targets_and_plots() -> None:
    text = render_report(_fake_results(), images={"batch": "img/bench_batch_size.png"})
    assert "Fake CPU" in text and "mars bench --quick" in text
    assert "| end-to-end throughput vs PySpark Structured Streaming | >= 3x | 4.00x | met |" in text
    assert f"| {MAPPER_BATCH_SIZE:,} | 50,000 | 7.2 | 400,000 | 1,000 |" in text
    assert "![mapper throughput vs batch size](img/bench_batch_size.png)" in text
    assert "| half the maximum (target) | 30,000 | 10 | 0.300 s | 1.400 s | 1.500 s |" in text
    assert "| a quarter of the maximum | 15,000 | 10 | 0.200 s | 0.500 s | 0.600 s |" in text
    assert "| 4.00x | met | 133% |" in text  # the share of the goal
    assert "| <= 0.5 s | 1.400 s | missed | 36% |" in text
    assert "--quick" in text


RUN = "MapperLoop.run (mapper/consumer_loop.py:87);MapperLoop.run_once (mapper/consumer_loop.py:1"
PROFILE = f"""
{RUN}25) 20
{RUN}50);MapperLoop._process (mapper/consumer_loop.py:130) 10
{RUN}50);MapperLoop._process (m.py:1);Preaggregator.run (p.py:6);CsvRecordDecoder.decode (d.py:1) 40
{RUN}50);MapperLoop._process (m.py:1);Preaggregator.run (p.py:6);Preaggregator._datasets (p.py:9) 15
{RUN}50);MapperLoop._process (m.py:1);SeqStore.apply_batch (s.py:91);Script.__call__ (r.py:1) 15
no stack here
"""


def test_profile_reading_gives_shares_of_the_mapper_loop() -> None:
    samples = inclusive_samples(PROFILE)
    assert samples["MapperLoop.run_once"] == 100
    assert samples["Preaggregator.run"] == 55
    assert samples["Consumer.consume"] == 20  # the loop's own samples: the native consume call
    lines = hot_frame_lines(PROFILE)
    assert lines[0].startswith("`MapperLoop._process`") and "80%" in lines[0]
    assert any("CsvRecordDecoder.decode" in line and "40%" in line for line in lines)
    assert any("SeqStore.apply_batch" in line and "15%" in line for line in lines)
    assert any("Consumer.consume" in line and "20%" in line for line in lines)
    assert top_functions(PROFILE, count=3) == [
        ("MapperLoop._process", 0.8),
        ("Preaggregator.run", 0.55),
        ("CsvRecordDecoder.decode", 0.4),
    ]
    assert hot_frame_lines("nothing here") == []

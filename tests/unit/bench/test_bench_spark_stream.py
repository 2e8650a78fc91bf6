"""Experiment 10's pure parts (mapper processes vs the Spark stream): a mode's phases from its
progress and CPU samples, the ratios, the stream's tally line, the Spark task's SQL, and the
report's section."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from benchmarks.report import SECTIONS, render_report
from benchmarks.report_merge import merge_report, split_sections
from benchmarks.report_spark_stream import SPARK_STREAM_HEADING
from benchmarks.stats import ProgressSample
from benchmarks.stream_figures import (
    ModeFigures,
    cpu_at,
    micro_batches,
    mode_phases,
    mode_ratios,
    steady_span,
)
from benchmarks.workload import paper_sql
from mars.sql import parse_task
from mars.tasks.spec import Preaggregation


def _progress(*points: tuple[float, int]) -> list[ProgressSample]:
    return [ProgressSample(t=t, done=done) for t, done in points]


# launched at t=100: nothing for 20 s (start-up), 10 % at 22, all 1,000 at 40
SPARK_LIKE = _progress((101, 0), (119, 0), (120, 50), (122, 100), (130, 500), (40 + 100, 1000))
CPU = [(100.0, 50.0), (110.0, 60.0), (122.0, 80.0), (135.0, 95.0), (141.0, 99.0)]


def test_steady_span_runs_from_a_tenth_applied_to_all_applied() -> None:
    start, end = steady_span(SPARK_LIKE, target=1000) or (None, None)
    assert start == ProgressSample(t=122, done=100)
    assert end == ProgressSample(t=140, done=1000)
    assert steady_span(SPARK_LIKE[:-1], target=1000) is None  # never all applied
    assert steady_span(_progress((1, 1000)), target=1000) is None  # one sample: no span


def test_cpu_at_counts_from_the_first_sample() -> None:
    assert cpu_at(CPU, 122.0) == 30.0
    assert cpu_at(CPU, 121.9) == 10.0  # the last sample before
    assert cpu_at(CPU, 50.0) == 0.0  # before sampling began
    assert math.isnan(cpu_at([], 1.0))


def test_mode_phases_split_start_up_from_the_steady_part() -> None:
    phases = mode_phases(SPARK_LIKE, CPU, launched=100.0, target=1000)
    assert phases.complete and phases.records_in == 1000
    assert phases.startup_s == 20.0
    assert phases.steady_from_s == 22.0
    assert phases.seconds == 40.0
    assert phases.records_per_s == 25.0
    assert phases.steady_records_per_s == 900 / 18
    assert phases.cpu_s == 45.0  # 95 at 135, the last sample before 140, minus 50
    assert phases.steady_cpu_s == 15.0
    assert phases.steady_records_per_cpu_s == 60.0
    assert phases.records_per_cpu_s == 1000 / 45


def test_an_incomplete_mode_has_no_rates_but_keeps_its_start_up() -> None:
    phases = mode_phases(SPARK_LIKE[:-1], CPU, launched=100.0, target=1000)
    assert not phases.complete and phases.records_in == 500
    assert phases.startup_s == 20.0
    for name in ("seconds", "records_per_s", "steady_records_per_s", "cpu_s"):
        assert math.isnan(getattr(phases, name)), name
    nothing = mode_phases([], [], launched=0.0, target=10)
    assert nothing.records_in == 0 and math.isnan(nothing.startup_s)


def test_ratios_are_mappers_over_spark() -> None:
    mappers = ModeFigures(records_per_s=100.0, steady_records_per_s=200.0, records_per_cpu_s=50.0)
    spark = ModeFigures(records_per_s=25.0, steady_records_per_s=50.0, records_per_cpu_s=10.0)
    spark = dataclasses.replace(spark, steady_records_per_cpu_s=10.0)
    ratios = mode_ratios(mappers, spark)
    assert ratios["records_per_s"] == 4.0 and ratios["steady_records_per_s"] == 4.0
    assert ratios["records_per_cpu_s"] == 5.0
    assert math.isnan(ratios["steady_records_per_cpu_s"])


def test_micro_batches_come_from_the_streams_last_tally() -> None:
    log = (
        "WARN something\n"
        "mars spark stream t1: stopped after 3 micro-batches: 1,000 records in, 0 late, 0 bad, "
        "40 data sets, 0 skipped as applied\n"
    )
    assert micro_batches(log) == 3
    assert micro_batches("killed before its tally") is None


def test_the_spark_task_is_the_papers_query_pre_aggregated_by_spark() -> None:
    spark = parse_task(paper_sql("S", options="preaggregation='spark'"), task_id="t-spark")
    mappers = parse_task(paper_sql("S"), task_id="t-mappers")
    assert spark.options.preaggregation is Preaggregation.SPARK
    assert mappers.options.preaggregation is Preaggregation.MAPPERS
    assert (spark.group_keys, spark.window) == (mappers.group_keys, mappers.window)


def _mode(**figures: float) -> dict[str, Any]:
    return {"complete": True, "records_in": 1_000_000, **figures}


def _results() -> dict[str, Any]:
    mappers = _mode(
        startup_s=2.0,
        steady_from_s=2.5,
        seconds=8.0,
        records_per_s=125_000.0,
        steady_records_per_s=160_000.0,
        cpu_s=12.0,
        steady_records_per_cpu_s=90_000.0,
    )
    spark = _mode(
        startup_s=25.0,
        steady_from_s=27.0,
        seconds=65.0,
        records_per_s=15_384.6,
        steady_records_per_s=23_684.2,
        cpu_s=110.0,
        steady_records_per_cpu_s=12_000.0,
        executors_cpu_s=70.0,
        micro_batches=1,
    )
    return {
        "records": 1_000_000,
        "mappers": 2,
        "workers": 2,
        "batch_size": 5000,
        "trigger_s": 1.0,
        "executor_memory": "512m",
        "spark_cluster_start_s": 12.3,
        "dataset": {"records": 1_000_000, "mbytes": 144.0, "partitions": 4},
        "modes": {"mappers": mappers, "spark": spark},
        "ratios": {
            "records_per_s": 8.125,
            "steady_records_per_s": 6.755,
            "records_per_cpu_s": 9.17,
            "steady_records_per_cpu_s": 7.5,
        },
    }


def test_report_renders_the_spark_stream_section() -> None:
    text = render_report({"spark_stream": _results()}, images={})
    body = "\n".join(dict(split_sections(text))[SPARK_STREAM_HEADING])
    assert "over 1,000,000 preloaded CSV tuples (144.0 MB, 4 partitions" in body
    assert "| 2 `mars mapper` processes | 2.0 s | 2.5 s | 8.0 s | 125,000 | 160,000 | 12.0 " in body
    assert (
        "| `mars spark stream`, standalone master + 2 workers | 25.0 s | 27.0 s | 65.0 s "
        "| 15,385 | 23,684 | 110.0 | 12,000 |"
    ) in body
    assert "| **mappers / Spark** | | | | 8.12x | 6.75x | | 7.50x |" in body
    assert "ran 1 micro-batch; of its 110.0 CPU seconds" in body
    assert "took 70.0, the driver the rest" in body
    assert SPARK_STREAM_HEADING + "\n\nNot run." in render_report({}, images={})


def test_an_incomplete_mode_says_how_far_it_got() -> None:
    results = _results()
    results["modes"]["spark"] = {"complete": False, "records_in": 5000, "startup_s": 30.0}
    results["modes"]["spark"] |= {"cpu_s": math.nan}
    text = render_report({"spark_stream": results}, images={})
    assert "| 30.0 s | | not all applied (5,000 records) | | | | |" in text


def test_a_spark_stream_run_merges_only_its_section_after_the_balance_section() -> None:
    earlier = render_report({}, images={})
    without = "\n".join(
        line
        for heading, lines in split_sections(earlier)
        if heading != SPARK_STREAM_HEADING
        for line in lines
    )
    fresh = render_report({"spark_stream": _results()}, images={})
    merged = merge_report(without, fresh, headings=SECTIONS["spark_stream"], provenance="*run 2*")
    sections = dict(split_sections(merged))
    assert sections[SPARK_STREAM_HEADING][2] == "*run 2*"
    headings = [heading for heading, _ in split_sections(merged)]
    assert headings.index(SECTIONS["balance"][0]) < headings.index(SPARK_STREAM_HEADING)
    assert headings.index(SPARK_STREAM_HEADING) < headings.index(SECTIONS["profile"][0])
    assert "Not run." in "\n".join(sections[SECTIONS["balance"][0]])

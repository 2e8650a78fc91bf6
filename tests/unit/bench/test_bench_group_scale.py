"""Experiment 16's pure parts: Flink SQL's job over the preloaded JSON records (the same
window, groups and aggregates as Mars's task), the hopping variant's query, the rows kept from
a result topic, their comparison with Mars's (by sip, or by window and sip), and the report
section with and without Flink and hopping runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import polars as pl
import pytest

from benchmarks.codec import from_json, to_json
from benchmarks.exp_group_scale import (
    DATA_END_MS,
    FLINK_QUERY,
    START_S,
    WINDOW_S,
    FlinkGroupRun,
    GroupRows,
    GroupScaleResult,
    GroupScaleRun,
    GroupScaleSettings,
    compare_rows,
    flink_check,
    group_scale_section,
    hopping_check,
    mars_sql,
    records_for,
    rows_frame,
    slides_for,
)
from benchmarks.flink_json import FlinkJsonJob, job_file
from benchmarks.targets import check_targets
from mars.config import KafkaSettings
from mars.engine.joined_values import JoinedValues
from mars.sql import parse_task

JAR = Path("/jars/flink-sql-connector-kafka-5.0.0-2.2.jar")
T0 = START_S * 1000


def frame(rows: list[tuple[str, int, int]]) -> pl.DataFrame:
    return rows_frame([(T0, sip, count, total) for sip, count, total in rows])


# -- the two queries --------------------------------------------------------------------------


def test_flink_reads_the_records_epoch_seconds_with_a_zero_delay_watermark() -> None:
    job = FlinkJsonJob(
        query=FLINK_QUERY,
        bootstrap="127.0.0.1:9092",
        topic="GS8000_ab",
        output="flink-groups-ab",
        run_id="groups-ab",
        parallelism=2,
    )
    found = job_file(job, jar=JAR)
    source, sink = found["statements"]
    assert source.startswith("CREATE TABLE records (\n")
    assert "`timestamp` BIGINT,\n  `sip` STRING,\n  `bytes` BIGINT," in source
    assert "ts AS TO_TIMESTAMP_LTZ(`timestamp`, 0),\n  WATERMARK FOR ts AS ts\n" in source
    assert "'topic' = 'GS8000_ab'" in source and "'format' = 'json'" in source
    assert "`window_start` BIGINT,\n  `sip` STRING,\n  `count_star` BIGINT" in sink
    assert "'sink.delivery-guarantee' = 'exactly-once'" in sink
    insert = found["insert"]
    assert "TUMBLE(TABLE records, DESCRIPTOR(ts), INTERVAL '5' MINUTE)" in insert
    assert "COUNT(*) AS count_star, SUM(`bytes`) AS sum_bytes" in insert
    assert insert.endswith("GROUP BY window_start, window_end, sip")


def test_mars_asks_the_same_question_and_names_its_columns_as_flinks_sink() -> None:
    spec = parse_task(mars_sql("GS8000_ab", WINDOW_S), task_id="t")
    assert spec.window.size_ms == spec.window.slide_ms == WINDOW_S * 1000
    assert [g.name for g in spec.group_keys] == ["sip"]
    assert spec.event_time.field == "timestamp" and spec.event_time.format.value == "epoch_s"
    sink = [name for name, _ in FLINK_QUERY.sink_columns]
    assert sink == ["window_start", "sip", *(a.alias for a in spec.aggregates)]


def test_the_hopping_variant_slides_the_same_window() -> None:
    spec = parse_task(mars_sql("GS8000_ab", 60), task_id="t")
    assert (spec.window.size_ms, spec.window.slide_ms) == (WINDOW_S * 1000, 60_000)
    assert "WINDOWING 300 s SLIDE 60 s" in mars_sql("GS8000_ab", 60)


def test_millions_of_sips_get_three_records_each_and_no_hopping_windows() -> None:
    settings = GroupScaleSettings(records=1_000_000, slides=(300, 60))
    assert records_for(settings, 8_000) == records_for(settings, 300_000) == 1_000_000
    assert records_for(settings, 3_000_000) == 9_000_000
    assert slides_for(settings, 300_000) == [300, 60]
    assert slides_for(settings, 3_000_000) == [300]


def test_the_warm_up_runs_the_most_groups_up_to_300000_and_quick_runs_none() -> None:
    assert GroupScaleSettings(groups=(8_000, 300_000)).warmup_groups() == 300_000
    assert GroupScaleSettings(groups=(8_000, 300_000, 3_000_000)).warmup_groups() == 300_000
    assert GroupScaleSettings(groups=(3_000_000,)).warmup_groups() is None
    assert GroupScaleSettings(groups=(8_000, 300_000), warmup=False).warmup_groups() is None
    assert GroupScaleSettings.QUICK["warmup"] is False


def test_the_data_fills_one_window_and_the_sentinels_lie_past_it() -> None:
    assert START_S % WINDOW_S == 0 and DATA_END_MS == (START_S + WINDOW_S) * 1000


# -- the rows ---------------------------------------------------------------------------------


def test_the_reader_keeps_the_data_windows_rows_and_still_counts() -> None:
    reader = GroupRows(kafka=KafkaSettings(), topic="out", count_field="count_star")
    first = {"window_start": T0, "sip": "10.0.0.1", "count_star": 3, "sum_bytes": 90}
    no_sum = {"window_start": T0, "sip": "10.0.0.2", "count_star": 1}
    reader.add_values(JoinedValues.of([msgspec.json.encode(r) for r in (first, no_sum)]), 1.0)
    sentinel = {"window_start": DATA_END_MS * 3, "sip": "0.0.0.0", "count_star": 1}
    reader.add_values(JoinedValues.of([msgspec.json.encode({**sentinel, "sum_bytes": 0})]), 3.0)
    assert reader.frame().rows() == [(T0, "10.0.0.1", 3, 90)]
    assert reader.total(before_ms=DATA_END_MS) == 4


def test_equal_rows_in_any_order_agree() -> None:
    mars = frame([("a", 1, 10), ("b", 2, 30)])
    assert compare_rows(frame([("b", 2, 30), ("a", 1, 10)]), mars) is None


@pytest.mark.parametrize(
    ("found", "problem"),
    [
        ([("a", 1, 10), ("b", 2, 31)], "1 of 2 rows differ, first b: (2, 31) vs (2, 30)"),
        ([("a", 1, 10), ("b", 3, 30)], "1 of 2 rows differ, first b: (3, 30) vs (2, 30)"),
        ([("a", 1, 10)], "1 of 2 rows differ, first b: (None, None) vs (2, 30)"),
        ([("a", 1, 10), ("b", 2, 30), ("c", 1, 1)], "first c: (1, 1) vs (None, None)"),
        ([("a", 1, 10), ("a", 1, 10), ("b", 2, 30)], "1 rows repeat a sip in the found rows"),
    ],
)
def test_every_kind_of_difference_is_caught(
    found: list[tuple[str, int, int]], problem: str
) -> None:
    difference = compare_rows(frame(found), frame([("a", 1, 10), ("b", 2, 30)]))
    assert difference is not None and problem in difference


def test_flink_agrees_only_when_equal_to_every_mars_run() -> None:
    rows = frame([("a", 1, 10)])
    assert flink_check(rows, {"python": rows, "columnar": rows}) == (
        True,
        "1 rows equal to Mars's (python, columnar state)",
    )
    agrees, check = flink_check(rows, {"python": rows, "columnar": frame([("a", 1, 11)])})
    assert not agrees and check.startswith("vs Mars columnar: 1 of 1 rows differ")
    assert flink_check(rows, {}) == (False, "no Mars rows to compare with")


def test_hopping_rows_are_compared_by_window_and_sip_with_the_python_states() -> None:
    python = rows_frame([(T0, "a", 1, 10), (T0 + 60_000, "a", 2, 20)])
    swapped = rows_frame([(T0, "a", 2, 20), (T0 + 60_000, "a", 1, 10)])
    assert hopping_check({"python": python}, "python") == "the reference"
    assert hopping_check({"python": python, "spilled": python}, "spilled") == (
        "equal to the Python state's"
    )
    check = hopping_check({"python": python, "spilled": swapped}, "spilled")
    assert check.startswith("differs from the Python state's: 2 of 2 rows differ, first ")
    assert hopping_check({"spilled": python}, "spilled") == "not compared: no Python state run"


# -- the report -------------------------------------------------------------------------------


def result(*, flink: bool) -> GroupScaleResult:
    runs = [
        GroupScaleRun(
            state=state,
            groups=groups,
            records=1_000,
            records_per_s=rate,
            complete=True,
            reducer_peak_rss_mb=peak,
        )
        for state, groups, rate, peak in [
            ("python", 8_000, 100.0, 300.0),
            ("columnar", 8_000, 200.0, 370.0),
            ("python", 300_000, 20.0, 300.0 + 292_000 * 1_000 / 1024**2),
            ("columnar", 300_000, 150.0, 370.0 + 292_000 * 200 / 1024**2),
        ]
    ]
    flinks = [
        FlinkGroupRun(
            groups=groups,
            records=1_000,
            records_per_s=rate,
            complete=True,
            cpu_s=9.0,
            submit_s=20.0,
            peak_rss_mb=900.0,
            agrees=True,
            check=f"{groups:,} rows equal to Mars's (python, columnar state)",
            settings={"flink": "2.2.1", "connector": "5.0.0-2.2", "checkpoint_interval_s": 5.0},
        )
        for groups, rate in [(8_000, 100.0), (300_000, 50.0)]
    ]
    return GroupScaleResult(
        mappers=2,
        reducers=2,
        flink_parallelism=2,
        runs=runs,
        flink=flinks if flink else [],
        notes=[] if flink else ["Flink SQL not measured: no peer virtualenv"],
    )


def test_the_section_sets_mars_columnar_beside_flink_sql() -> None:
    text = group_scale_section(result(flink=True))
    assert "Flink SQL 2.2.1 (connector 5.0.0-2.2, PyFlink's MiniCluster, parallelism 2" in text
    assert "| 300,000 | 50 | 150 | 3.00 | 9.0 | 900 | 20.0 | — | yes: 300,000 rows equal" in text
    assert "| 8,000 | 100 | 200 | 2.00 |" in text
    assert "columnar: 0.75x at 300,000 groups vs 8,000" in text
    assert "Flink SQL: 0.50x at 300,000 groups vs 8,000" in text
    assert (
        "over the groups added; `B per open group` above also holds what the reducers pay at "
        "any group count): python: 1,000 B (8,000 to 300,000 groups); columnar: 200 B (8,000 "
        "to 300,000 groups)."
    ) in text


def test_without_flink_the_section_says_why_and_keeps_mars() -> None:
    text = group_scale_section(result(flink=False))
    assert "Flink SQL records/s" not in text and "python: 0.20x" in text
    assert text.endswith("Note: Flink SQL not measured: no peer virtualenv")


def test_hopping_runs_have_their_rows_and_spilling_beside_the_columnar_state() -> None:
    found = result(flink=True)
    found.runs += [
        GroupScaleRun(
            state=state,
            groups=1_400_000,
            records=1_000,
            slide_s=60,
            records_per_s=rate,
            complete=True,
            reducer_idle_rss_mb=280.0,
            reducer_peak_rss_mb=peak,
            check=check,
        )
        for state, rate, peak, check in [
            ("columnar", 100.0, 880.0, "equal to the Python state's"),
            ("spilled", 90.0, 580.0, "equal to the Python state's"),
        ]
    ]
    text = group_scale_section(found)
    assert "| spilled | 1 | 300 s SLIDE 60 s | 1,400,000 | 90 | 580 (280 idle) |" in text
    assert text.count("equal to the Python state's |") == 2
    assert (
        "Spilling beside the columnar state in memory: 300 s SLIDE 60 s at 1,400,000 groups, "
        "run 1: "
        "0.50x the columnar state's peak over idle (300 vs 600 MiB), 0.90x its rate."
    ) in text
    # the ratios and the memory per group added are the tumbling runs' alone
    assert "columnar: 0.75x at 300,000 groups vs 8,000" in text
    assert "columnar: 200 B (8,000 to 300,000 groups)." in text


def test_repeated_runs_give_each_group_count_the_median_and_each_run_its_ratio() -> None:
    found = result(flink=True)
    found.runs = [
        GroupScaleRun(
            state="columnar",
            groups=groups,
            records=1_000,
            repeat=repeat,
            records_per_s=rate,
            complete=True,
            reducer_peak_rss_mb=370.0 + groups * 200 / 1024**2,
        )
        for repeat, rates in enumerate([(200.0, 150.0), (400.0, 160.0), (300.0, 90.0)], start=1)
        for groups, rate in zip((8_000, 300_000), rates, strict=True)
    ]
    # a run that timed out: no rate, and its groups are the rows it got; left out
    found.runs.append(GroupScaleRun(state="columnar", groups=7_000, records=1_000, repeat=4))
    text = group_scale_section(found)
    assert "| columnar | 3 | 300 s | 300,000 | 90 |" in text
    # medians 300 and 150; each run over the same run at 8,000 groups
    assert "columnar: 0.50x at 300,000 groups vs 8,000 (run by run 0.75x, 0.40x, 0.30x)" in text
    assert "| 300,000 | 50 | 150 | 3.00 |" in text  # Flink beside the median
    as_json = json.loads(json.dumps(to_json(found)))
    rows = {row.name.split(" at ")[0]: row for row in check_targets({"group_scale": as_json})}
    assert rows["columnar state's records/s"].measured == "0.50x"
    assert rows["columnar state"].measured == "3.00x"


def test_the_result_survives_its_json_form() -> None:
    found = result(flink=True)
    assert from_json(GroupScaleResult, to_json(found)) == found
    found.warmup = GroupScaleRun(state="columnar", groups=289_329, records=1_000_000)
    assert from_json(GroupScaleResult, to_json(found)) == found


def test_the_section_says_whether_an_uncounted_run_came_first() -> None:
    found = result(flink=False)
    assert "No warm-up run." in group_scale_section(found)
    found.warmup = GroupScaleRun(
        state="columnar", groups=289_329, records=1_000_000, records_per_s=150_000.0
    )
    text = group_scale_section(found)
    assert "one columnar run at 289,329 groups, not counted (150,000 records/s)" in text
    assert "columnar: 0.75x at 300,000 groups vs 8,000" in text  # the counted runs' only


def test_the_targets_read_the_columnar_runs_and_flink_at_the_most_groups() -> None:
    def run(state: str, groups: int, rate: float, peak_mb: float) -> dict[str, Any]:
        return {
            "state": state,
            "groups": groups,
            "records_per_s": rate,
            "reducer_peak_rss_mb": peak_mb,
            "bytes_per_group": peak_mb * 1024**2 / groups,  # over idle: not the target's
            "complete": True,
        }

    hopping = {**run("columnar", 1_400_000, 1_000.0, 9_000.0), "slide_s": 60}  # not a target's
    found = {
        "runs": [
            hopping,
            run("python", 8_000, 250_000.0, 100.0),
            run("columnar", 8_000, 200_000.0, 370.0),
            # 282,000 groups added, 180 B each
            run("columnar", 290_000, 130_000.0, 370.0 + 282_000 * 180 / 1024**2),
            run("columnar", 2_900_000, 10_000.0, 900.0),  # opt-in size: not the target's
        ],
        "flink": [{"groups": 290_000, "records_per_s": 30_000.0, "complete": True}],
    }
    rows = {row.name.split(" at ")[0]: row for row in check_targets({"group_scale": found})}
    assert rows["columnar state"].measured == "4.33x" and rows["columnar state"].met
    kept = rows["columnar state's records/s"]
    assert kept.measured == "0.65x" and kept.met
    memory = rows["reducers' peak RSS per open group added from 8,000 to 290,000 groups (columnar)"]
    assert memory.measured == "180 B" and memory.met
    assert not any("Flink" in row.name for row in check_targets({}))

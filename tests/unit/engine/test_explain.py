"""`explain`: the plan follows the spec and the code that runs it (window kinds, field types,
partial states, error bounds, topics)."""

from __future__ import annotations

from typing import Any

import pytest

from mars.aggregates import aggregate_for
from mars.aggregates.accuracy import HLL_RELATIVE_STANDARD_ERROR, accuracy
from mars.aggregates.frequent import capacity
from mars.engine.explain import explain
from mars.sql import parse_task
from mars.tasks.spec import AggFunc


def _plan(sql: str, **options: Any) -> dict[str, Any]:
    spec = parse_task(sql, task_id="t", options=options or None)
    plan: dict[str, Any] = explain(spec).to_json_dict()
    return plan


def test_tumbling_json_task() -> None:
    plan = _plan(
        "SELECT sip, count(*) AS n, avg(bytes) AS a FROM flows GROUP BY sip WINDOWING 60 s",
        event_time="ts",
        event_time_format="epoch_s",
    )
    assert plan["window"]["kind"] == "tumbling"
    assert "s + 60000 ms" in plan["window"]["close_rule"]
    fields = {f["name"]: f for f in plan["fields"]}
    assert fields["ts"]["type"] == "number: epoch seconds"
    assert fields["bytes"]["type"].startswith("number")
    assert fields["sip"]["read_by"] == ("group key sip",)
    assert [a["alias"] for a in plan["aggregates"]] == ["n", "a"]
    assert plan["aggregates"][1]["partial_exprs"] == (
        'col("bytes").sum().alias("a.sum")',
        'col("bytes").count().alias("a.n")',
    )
    assert plan["output_topics"] == {
        "results": "mars.results.t",
        "late": "mars.late.t",
        "dead_letter": "mars.dlq.t",
        "updates": None,
    }


def test_cumulative_csv_task() -> None:
    plan = _plan(
        "SELECT sip, max(bytes) AS m FROM flows GROUP BY sip "
        "WINDOWING CUMULATE 60 s STEP 10 s GRACE 2 s",
        format="csv",
        csv_columns="ts,sip,bytes",
        event_time="ts",
    )
    assert plan["window"]["kind"] == "cumulative"
    assert "e + 2000 ms" in plan["window"]["close_rule"]
    assert {f["name"]: f["type"] for f in plan["fields"]}["sip"] == "string (CSV text)"


def test_emit_changes_names_the_updates_topic() -> None:
    plan = _plan(
        "SELECT sip, count(*) AS n FROM flows GROUP BY sip WINDOWING 60 s EMIT CHANGES",
        event_time="ts",
    )
    assert plan["output_topics"]["updates"] == "mars.updates.t"
    assert "EMIT CHANGES" in plan["reducer"]["emit"]


def test_processing_time_reads_no_time_field() -> None:
    plan = _plan("SELECT count(*) AS n FROM flows WINDOWING 10 s", event_time="processing")
    assert plan["fields"] == ()
    assert plan["event_time"].startswith("processing time")


@pytest.mark.parametrize(
    ("func", "parameters", "approximate"),
    [
        (AggFunc.COUNT, (), False),
        (AggFunc.MIN, (), False),
        (AggFunc.COUNT_DISTINCT, (), False),
        (AggFunc.STDDEV_SAMP, (), False),
        (AggFunc.APPROX_COUNT_DISTINCT, (), True),
        (AggFunc.APPROX_PERCENTILES, (0.5, 0.9), True),
        (AggFunc.TOPK, (100.0,), True),
    ],
)
def test_accuracy_of_each_kind(
    func: AggFunc, parameters: tuple[float, ...], approximate: bool
) -> None:
    bound = accuracy(aggregate_for(func, has_argument=True, parameters=parameters))
    assert bound.approximate is approximate


def test_bounds_come_from_the_sketch_parameters() -> None:
    assert pytest.approx(0.01625) == HLL_RELATIVE_STANDARD_ERROR
    topk = accuracy(aggregate_for(AggFunc.TOPK, has_argument=True, parameters=(100.0,)))
    assert f"exact up to {capacity(100)} distinct values" in topk.bound
    assert f"n / {capacity(100) + 1}" in topk.bound

"""`WITH (watermark = 'key' [, key_lag = ...])`: parsing, defaults and what it refuses."""

from __future__ import annotations

import pytest

from mars.aggregates import Max, state_aggregates
from mars.sql import TaskError, parse_task
from mars.tasks.spec import TaskSpec, WatermarkMode

BASE = "SELECT device, count(*) AS n FROM S GROUP BY device"


def test_default_is_the_partition_watermark() -> None:
    spec = parse_task(f"{BASE} WINDOWING 1 m", task_id="t")
    assert spec.options.watermark is WatermarkMode.PARTITION
    assert len(state_aggregates(spec)) == 1


def test_key_watermark_with_key_lag_round_trips() -> None:
    spec = parse_task(
        f"{BASE} WINDOWING 1 m SLIDE 30 s WITH (watermark = 'key', key_lag = '5 minutes')",
        task_id="t",
    )
    assert spec.options.watermark is WatermarkMode.KEY
    assert spec.options.key_lag_ms == 300_000
    assert TaskSpec.from_json_dict(spec.to_json_dict()) == spec
    assert isinstance(state_aggregates(spec)[-1], Max)  # the key's latest time rides along


def test_session_windows_take_key_watermarks_with_one_end_state() -> None:
    spec = parse_task(f"{BASE} WINDOWING SESSION 1 m WITH (watermark = 'key')", task_id="t")
    assert spec.options.watermark is WatermarkMode.KEY
    # the session's end is its key's latest time: one MAX carries both
    assert len(state_aggregates(spec)) == 2


def test_the_spark_stream_may_pre_aggregate_a_key_watermark_task() -> None:
    sql = f"{BASE} WINDOWING 1 m WITH (watermark = 'key', preaggregation = 'spark')"
    spec = parse_task(sql, task_id="t")
    assert spec.options.watermark is WatermarkMode.KEY


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        (f"{BASE} WINDOWING CUMULATE 1 h STEP 1 m WITH (watermark = 'key')", "cumulative"),
        (f"{BASE} ORDER BY n DESC LIMIT 3 WINDOWING 1 m WITH (watermark = 'key')", "LIMIT"),
        (f"{BASE} WINDOWING 1 m WITH (watermark = 'tuple')", "not one of"),
        (f"{BASE} WINDOWING 1 m WITH (key_lag = '1 m')", "needs watermark = 'key'"),
    ],
)
def test_refused_with_a_positioned_error(sql: str, message: str) -> None:
    with pytest.raises(TaskError) as caught:
        parse_task(sql, task_id="t")
    assert message in str(caught.value)
    assert caught.value.position is not None

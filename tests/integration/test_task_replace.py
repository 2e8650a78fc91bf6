"""A running task's query replaced under live traffic (`PUT /tasks/{id}`).

One tumbling task over a live stream, under real mapper and reducer processes:
- an incompatible change (other group keys, another window size) is refused with a 409 that
  names what differs, and the task's spec stays as it was;
- a compatible one adds an aggregate: the answer gives the first window of the new query `W`
  (after every window written so far); every window from `W` on carries the new aggregate,
  exact against the DuckDB oracle; windows before `W` give NULL for it; the old aggregate
  stays exact in every window, each (window, group) emitted once.
"""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest
from confluent_kafka.admin import AdminClient

from devtools.gen import GeneratorConfig
from devtools.local import ClusterState
from tests.integration.pipeline import OracleInBackground, TopicReader, check_exact, wait_for
from tests.integration.watched import (
    WatchedPipeline,
    close_every_window,
    live_producer,
    make_topic,
    windowed_sql,
)
from tests.oracle import ExpectedResults

pytestmark = pytest.mark.integration

RATE = 800
# The change lands about 16 s in; its first window W starts at most a window later, and the
# stream runs on past it (both asserted below).
PRODUCE_S = 30
PARTITIONS = 2
SEED = 23
WINDOW = "10 s"
WINDOW_MS = 10_000
GROUPS = ("type",)
BEFORE = {"n": "count(*)"}
AFTER = {"n": "count(*)", "total": "sum(bytes)"}
OPTIONS = {"buckets": 2}


def _put(pipeline: WatchedPipeline, task: str, sql: str) -> httpx.Response:
    return pipeline.call("PUT", f"/tasks/{task}", body={"sql": sql, "options": OPTIONS}, timeout=60)


@pytest.mark.pipeline(mappers=1, reducers=1, env={"MARS_REDUCER__CHECKPOINT_INTERVAL_MS": "1000"})
@pytest.mark.timeout(360)
def test_an_aggregate_added_under_live_traffic_is_exact_from_its_first_window(
    pipeline: WatchedPipeline,
    cluster: ClusterState,
    kafka_admin: AdminClient,
    unique_name: str,
) -> None:
    topic = make_topic(kafka_admin, f"{unique_name}_src", partitions=PARTITIONS)
    task = f"{unique_name}replace"
    body = pipeline.register(
        windowed_sql(topic, GROUPS, BEFORE, WINDOW), task_id=task, options=OPTIONS
    )
    output = body["topics"]["output"]
    start_s = int(time.time())
    config = GeneratorConfig(count=RATE * PRODUCE_S, start_s=start_s, span_s=PRODUCE_S, seed=SEED)
    oracle = OracleInBackground(
        config, group_by=list(GROUPS), window_ms=WINDOW_MS, aggregates=AFTER
    )
    producer = live_producer(
        cluster.kafka_bootstrap, topic, start_s=start_s, rate=RATE, seconds=PRODUCE_S, seed=SEED
    )
    try:
        time.sleep(12)
        before: dict[str, Any] = pipeline.get(f"/tasks/{task}")["spec"]
        for sql, differs in (
            (windowed_sql(topic, ("sip",), AFTER, WINDOW), "group keys: type = type -> sip = sip"),
            (windowed_sql(topic, GROUPS, AFTER, "20 s"), "window size (ms): 10000 -> 20000"),
        ):
            refused = _put(pipeline, task, sql)
            assert refused.status_code == 409, refused.text
            assert differs in refused.json()["error"]["message"]
        assert pipeline.get(f"/tasks/{task}")["spec"] == before
        changed = _put(pipeline, task, windowed_sql(topic, GROUPS, AFTER, WINDOW))
        assert changed.status_code == 200, changed.text
        spec = changed.json()["spec"]
        first_new_ms: int = spec["revisions"][-1]["from_window_ms"]
        assert start_s * 1000 < first_new_ms <= time.time() * 1000 + WINDOW_MS, spec
        assert [a["alias"] for a in spec["aggregates"]] == ["n", "total"]
        # Pull queries right after the change read checkpoints written before it (fewer states).
        for _ in range(5):
            current = pipeline.get(f"/tasks/{task}/windows")["rows"]
            assert all("total" in row for row in current if not row["final"]), current[:3]
            time.sleep(0.5)
        assert not producer.done(), "the stream ended before the change: raise PRODUCE_S"
        producer.join(timeout_s=PRODUCE_S * 2)
        close_every_window(
            cluster.kafka_bootstrap, topic, after_s=start_s + PRODUCE_S, partitions=PARTITIONS
        )
        exact = oracle.result(timeout_s=180)[0]
    finally:
        oracle.close()
    # Windows before the change: `total` is NULL (the new aggregate holds no data there), or
    # absent from the rows of the windows the reducer closed before it took the new query.
    expected = ExpectedResults(
        results={
            key: {**row, "total": row["total"] if key[0] >= first_new_ms else None}
            for key, row in exact.items()
        },
        valid=exact.valid,
        skipped=exact.skipped,
    )
    assert any(key[0] < first_new_ms for key in expected), "no window before the change"
    assert any(key[0] >= first_new_ms for key in expected), "no window after the change"
    reader = TopicReader(cluster.kafka_bootstrap, [output])
    try:
        wait_for(
            lambda: len(reader.values(output)) >= len(expected),
            timeout_s=120,
            what="the task's results",
            logs=pipeline.logs,
            every=lambda: reader.poll_for(0.5),
        )
        reader.poll_for(2.0)  # anything beyond the expected rows shows now
        rows = reader.values(output)
    finally:
        reader.close()
    without = [row for row in rows if "total" not in row]
    assert all(row["window_start"] < first_new_ms for row in without), without[:3]
    check_exact([{"total": None, **row} for row in rows], expected, GROUPS, tuple(AFTER))

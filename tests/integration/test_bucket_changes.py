"""A running task's bucket count changes without re-registering it (issue: load-aware placement).

Two tasks over one live stream with Zipf-skewed keys, registered with 2 buckets each (a
tumbling and a hopping window), under real mapper and reducer processes:

- `PATCH /tasks/{id}` `{"buckets": 6}` mid-run: the new epoch starts after every window
  written so far; the leader assigns units for buckets 2..5 and their owners merge data sets
  within seconds (the hot load spreads over six units);
- `{"buckets": 3}` later: fewer buckets for later windows, the six units stay owned;
- a reducer killed (SIGKILL) between the two changes: its units rebuild from checkpoints;
- every window and group of both tasks is emitted once, exact against the DuckDB oracle.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient

from devtools.gen import GeneratorConfig
from devtools.local import ClusterState
from tests.integration.pipeline import ExpectedTopic, OracleInBackground, wait_exact, wait_for
from tests.integration.watched import (
    WatchedPipeline,
    close_every_window,
    live_producer,
    make_topic,
    windowed_sql,
)

pytestmark = [pytest.mark.integration, pytest.mark.exclusive]

RATE = 1_500
PRODUCE_S = 50
PARTITIONS = 2
SEED = 17
ZIPF = 1.2
# task suffix -> (SQL windowing, group columns, aggregates, window ms, slide ms)
TASKS: dict[str, tuple[str, tuple[str, ...], dict[str, str], int, int]] = {
    "tumbling": ("10 s", ("sip", "type"), {"n": "count(*)", "total": "sum(bytes)"}, 10_000, 10_000),
    "hopping": ("20 s SLIDE 10 s", ("dport",), {"n": "count(*)"}, 20_000, 10_000),
}


@pytest.mark.pipeline(mappers=1, reducers=2, env={"MARS_REDUCER__CHECKPOINT_INTERVAL_MS": "1000"})
@pytest.mark.timeout(360)
def test_bucket_count_changes_mid_run_spread_the_load_and_stay_exact(
    pipeline: WatchedPipeline,
    cluster: ClusterState,
    kafka_admin: AdminClient,
    unique_name: str,
) -> None:
    topic = make_topic(kafka_admin, f"{unique_name}_src", partitions=PARTITIONS)
    outputs: dict[str, str] = {}
    for suffix, (windowing, groups, aggregates, _, _) in TASKS.items():
        sql = windowed_sql(topic, groups, aggregates, windowing)
        body = pipeline.register(sql, task_id=f"{unique_name}{suffix}", options={"buckets": 2})
        outputs[suffix] = body["topics"]["output"]
    start_s = int(time.time())
    config = GeneratorConfig(
        count=RATE * PRODUCE_S, start_s=start_s, span_s=PRODUCE_S, seed=SEED, zipf_s=ZIPF
    )
    oracles = {
        suffix: OracleInBackground(
            config, group_by=list(groups), window_ms=size, slide_ms=slide, aggregates=aggregates
        )
        for suffix, (_, groups, aggregates, size, slide) in TASKS.items()
    }
    producer = live_producer(
        cluster.kafka_bootstrap,
        topic,
        start_s=start_s,
        rate=RATE,
        seconds=PRODUCE_S,
        seed=SEED,
        zipf_s=ZIPF,
    )
    tasks = {suffix: f"{unique_name}{suffix}" for suffix in TASKS}
    try:
        time.sleep(12)
        for task in tasks.values():
            _change_buckets(pipeline, task, 6, since_s=start_s)
        for task in tasks.values():
            _check_new_units_merge(pipeline, task, buckets=range(2, 6))
        _kill_a_reducer(pipeline)
        for task in tasks.values():
            _change_buckets(pipeline, task, 3, since_s=start_s)
        assert not producer.done(), "the stream ended before the second change: raise PRODUCE_S"
        producer.join(timeout_s=PRODUCE_S * 2)
        close_every_window(
            cluster.kafka_bootstrap, topic, after_s=start_s + PRODUCE_S, partitions=PARTITIONS
        )
        expected = {suffix: oracle.result(timeout_s=180)[0] for suffix, oracle in oracles.items()}
    finally:
        for oracle in oracles.values():
            oracle.close()
    expectations = [
        ExpectedTopic(outputs[suffix], expected[suffix], groups, tuple(aggregates))
        for suffix, (_, groups, aggregates, _, _) in TASKS.items()
    ]
    wait_exact(cluster.kafka_bootstrap, expectations, logs=pipeline.logs)


def _change_buckets(pipeline: WatchedPipeline, task: str, buckets: int, *, since_s: int) -> None:
    """PATCH the count; the new epoch starts after the windows written so far, which follow
    the wall clock here: after the stream's start, and at most a window ahead of now."""
    response = pipeline.call("PATCH", f"/tasks/{task}", body={"buckets": buckets})
    assert response.status_code == 200, response.text
    options: dict[str, Any] = response.json()["spec"]["options"]
    change = options["bucket_changes"][-1]
    assert change["buckets"] == buckets
    assert since_s * 1000 < change["from_window_ms"] <= time.time() * 1000 + 20_000, change


def _check_new_units_merge(pipeline: WatchedPipeline, task: str, *, buckets: range) -> None:
    """The leader assigns the new buckets' units and their owners publish merged windows."""

    def merging() -> bool:
        units = {u["bucket"]: u for u in pipeline.get(f"/tasks/{task}")["live"]["units"]}
        return all(bucket in units and (units[bucket]["merge_rate"] or 0) > 0 for bucket in buckets)

    what = f"{task}: buckets {list(buckets)} merging"
    wait_for(merging, timeout_s=30, what=what, logs=pipeline.logs)


def _kill_a_reducer(pipeline: WatchedPipeline) -> None:
    members = pipeline.get("/cluster")["members"]
    victim = max(members, key=lambda m: members[m]["units"])
    pipeline.procs.kill(pipeline.procs.by_pid(members[victim]["pid"]))  # SIGKILL
    wait_for(
        lambda: victim not in pipeline.get("/cluster")["members"],
        timeout_s=40,
        what="the killed reducer's session to expire",
        logs=pipeline.logs,
    )

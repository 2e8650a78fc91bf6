"""Prometheus metrics of every role against the exact counters, and lag that moves.

Two mappers, two reducers and the API on a 4-partition topic with live traffic (event time =
wall clock, 2 s disorder, 1 % malformed). The reducers start late, so the mappers' backlog
mark pauses their partitions first:
- consumer lag and paused partitions show up (metrics and `GET /cluster`), then drain to 0;
- the watermark lag is small while traffic flows and grows once it stops;
- every process's `/metrics`, found through `GET /metrics/targets`, parses with
  `prometheus_client.parser`; the mappers' counters sum to the task's exact counters in Redis
  (which the API exports), the reducers' to their committed progress and to the results topic.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka.admin import AdminClient

from devtools.local import ClusterState
from tests.integration.pipeline import BackgroundProducer, TopicReader, wait_for
from tests.integration.watched import (
    Scrape,
    WatchedPipeline,
    live_producer,
    make_topic,
    scrape,
    total,
)

pytestmark = pytest.mark.integration

RATE = 2_000
PRODUCE_S = 30
PARTITIONS = 4
BUCKETS = 4
IDLE_TIMEOUT_S = 10
SQL = "SELECT type, count(*) FROM {topic} GROUP BY type WINDOWING 5 s"


def _mapper_scrapes(pipeline: WatchedPipeline) -> list[Scrape]:
    return [scrape(address) for address in pipeline.targets().get("mapper", [])]


@pytest.mark.pipeline(env={"MARS_MAPPER__BACKLOG_HIGH_DATASETS": "40"})  # roles start later
@pytest.mark.timeout(300)
def test_metrics_agree_with_exact_counters_and_lag_moves(
    pipeline: WatchedPipeline,
    cluster: ClusterState,
    kafka_admin: AdminClient,
    unique_name: str,
) -> None:
    topic = make_topic(kafka_admin, f"{unique_name}_src", partitions=PARTITIONS)
    task = f"{unique_name}t"
    spec = pipeline.register(
        SQL.format(topic=topic),
        task_id=task,
        options={"idle_timeout": f"{IDLE_TIMEOUT_S} s", "buckets": BUCKETS},
    )
    pipeline.procs.start_many(["mapper", "mapper"])
    start_s = int(time.time())
    producer = live_producer(
        cluster.kafka_bootstrap,
        topic,
        start_s=start_s,
        rate=RATE,
        seconds=PRODUCE_S,
        disorder_s=2,
        malformed_ratio=0.01,
    )
    _see_paused_partitions_lag(pipeline)
    pipeline.procs.start_many(["reducer", "reducer"])
    lags_during = _watch_while_traffic_flows(pipeline, task, producer)
    produced = producer.join(timeout_s=30).produced
    lags_after = _watch_after_traffic_stops(pipeline, task)
    assert max(lags_after) >= min(lags_during) + 4, (lags_during, lags_after)

    # Idle close emits the last windows; the lag is gone and nothing is paused.
    last_window_end = ((start_s + PRODUCE_S) // 5 + 1) * 5_000
    wait_for(
        lambda: (pipeline.get(f"/tasks/{task}")["live"]["watermark"] or 0) >= last_window_end,
        timeout_s=60,
        what="the watermark to pass the last window",
        logs=pipeline.logs,
    )
    time.sleep(2)  # the owners publish about once a second
    targets = pipeline.targets()
    assert {role: len(addresses) for role, addresses in targets.items()} == {
        "api": 1,
        "mapper": 2,
        "reducer": 2,
    }
    scrapes = {role: [scrape(a) for a in addresses] for role, addresses in targets.items()}
    for role in ("mapper", "reducer"):
        assert all(s.total("mars_process_info", role=role) == 1 for s in scrapes[role])
        assert all(s.total("process_cpu_seconds_total") > 0 for s in scrapes[role])
    counters = pipeline.get(f"/tasks/{task}")["stats"]["counters"]
    assert counters["records_in"] == produced
    _check_mappers(pipeline, scrapes, task, counters)
    _check_reducers(pipeline, scrapes["reducer"], task, counters, spec["topics"]["output"])
    _check_cluster(pipeline, scrapes["api"][0], task)


def _mapper_scrapes(pipeline: WatchedPipeline) -> list[Scrape]:
    return [scrape(address) for address in pipeline.targets().get("mapper", [])]


def _see_paused_partitions_lag(pipeline: WatchedPipeline) -> None:
    """No reducer yet: the backlog mark pauses partitions, and their lag grows."""

    def paused_with_lag() -> bool:
        scrapes = _mapper_scrapes(pipeline)
        lags = [v for s in scrapes for v in s.values("mars_mapper_consumer_lag_records").values()]
        return total(scrapes, "mars_mapper_partition_paused") > 0 and max(lags, default=0) > 0

    wait_for(paused_with_lag, timeout_s=60, what="a paused partition with lag", logs=pipeline.logs)
    wait_for(
        lambda: any(
            p["paused"] and (p["lag"] or 0) > 0
            for mapper in pipeline.get("/cluster")["mappers"].values()
            for p in mapper.get("partitions", [])
        ),
        timeout_s=10,
        what="GET /cluster to show a paused partition with lag",
    )


def _watch_while_traffic_flows(
    pipeline: WatchedPipeline, task: str, producer: BackgroundProducer
) -> list[float]:
    """The reducers catch up: the watermark stays near the wall clock; the input rate shows.
    Returns the watermark lags (s) seen once the backlog was merged."""
    lags: list[float] = []
    rates: list[float] = []
    while not producer.done():
        live = pipeline.get(f"/tasks/{task}")["live"]
        if live["input_rate"] is not None:
            rates.append(live["input_rate"])
        if live["watermark_lag_ms"] is not None and live["backlog_datasets"] == 0:
            lags.append(live["watermark_lag_ms"] / 1000)
        time.sleep(0.5)
    assert lags, f"no watermark while traffic flowed\n{pipeline.logs()}"
    assert min(lags) < 6, lags
    assert any(0.5 * RATE <= r <= 2 * RATE for r in rates), rates
    return lags


def _watch_after_traffic_stops(pipeline: WatchedPipeline, task: str) -> list[float]:
    """The watermark lags (s) over the idle timeout after the last record."""
    lags: list[float] = []
    deadline = time.monotonic() + IDLE_TIMEOUT_S
    while time.monotonic() < deadline:
        lag_ms = pipeline.get(f"/tasks/{task}")["live"]["watermark_lag_ms"]
        if lag_ms is not None:
            lags.append(lag_ms / 1000)
        time.sleep(0.5)
    return lags


def _check_mappers(
    pipeline: WatchedPipeline,
    scrapes: dict[str, list[Scrape]],
    task: str,
    counters: dict[str, int],
) -> None:
    """The mappers' counters sum to the exact ones in Redis, which the API exports; no lag."""
    mappers, api = scrapes["mapper"], scrapes["api"][0]
    assert counters["bad"] > 0
    for name, redis_name in (
        ("in", "records_in"),
        ("accepted", "accepted"),
        ("late", "late"),
        ("bad", "bad"),
    ):
        mapped = total(mappers, f"mars_mapper_records_{name}_total", task=task)
        exported = api.total(f"mars_task_records_{name}_total", task=task)
        assert mapped == exported == counters.get(redis_name, 0), name
    batches = total(mappers, "mars_mapper_batches_total", task=task)
    assert total(mappers, "mars_mapper_batch_duration_seconds_count", task=task) == batches
    assert total(mappers, "mars_mapper_paused_seconds_total", task=task) > 0
    assert total(mappers, "mars_mapper_consumer_lag_records") == 0
    assert total(mappers, "mars_mapper_partition_paused") == 0
    for mapper in pipeline.get("/cluster")["mappers"].values():
        assert {p["lag"] for p in mapper["partitions"]} == {0}, mapper


def _check_reducers(
    pipeline: WatchedPipeline,
    reducers: list[Scrape],
    task: str,
    counters: dict[str, int],
    output_topic: str,
) -> None:
    """The reducers' counters sum to their committed progress and to the results topic."""
    units = pipeline.get(f"/tasks/{task}")["live"]["units"]
    windows = sum(unit["windows_emitted"] for unit in units)
    rows = sum(unit["results_emitted"] for unit in units)
    reader = TopicReader(pipeline.bootstrap, [output_topic])
    try:
        wait_for(
            lambda: len(reader.records[output_topic]) >= rows,
            timeout_s=30,
            what="the result rows",
            every=lambda: reader.poll_for(0.5),
        )
        reader.poll_for(1.0)  # and nothing more
        on_topic = len(reader.records[output_topic])
    finally:
        reader.close()
    assert windows > 0
    assert total(reducers, "mars_reducer_windows_emitted_total", task=task) == windows
    assert total(reducers, "mars_reducer_result_rows_total", task=task) == rows == on_topic
    late = counters.get("late_reducer", 0)
    assert total(reducers, "mars_reducer_late_records_total", task=task) == late
    assert total(reducers, "mars_reducer_result_latency_seconds_count", task=task) == windows
    assert total(reducers, "mars_reducer_commit_duration_seconds_count", task=task) > 0
    assert total(reducers, "mars_reducer_checkpoint_duration_seconds_count", task=task) > 0
    assert total(reducers, "mars_reducer_datasets_merged_total", task=task) > 0
    assert total(reducers, "mars_reducer_owned_units") == BUCKETS


def _check_cluster(pipeline: WatchedPipeline, api: Scrape, task: str) -> None:
    """The cluster as a whole, from the API's own metrics."""
    assert api.total("mars_reducers") == 2 and api.total("mars_mappers") == 2
    leader = api.values("mars_leader_info")
    assert len(leader) == 1
    assert dict(next(iter(leader)))["member"] in pipeline.get("/cluster")["members"]
    assert api.total("mars_assignment_generation") >= 1
    assert api.total("mars_redis_used_memory_bytes") > 0
    assert api.total("mars_task_backlog_datasets", task=task) == 0
    assert api.total("mars_task_info", task=task, status="RUNNING") == 1
    # Elasticity advice from the CPU share each process publishes.
    cluster = pipeline.get("/cluster")
    assert all(
        m["cpu"] is not None for m in [*cluster["members"].values(), *cluster["mappers"].values()]
    )
    for role in ("reducers", "mappers"):
        advice = cluster["advice"][role]
        assert advice["current"] == 2 and advice["needed"] >= 1 and advice["mean_cpu"] is not None
        assert api.total("mars_advice_processes_needed", role=role) >= 1

"""The live pre-aggregation of a task on Spark Structured Streaming (`mars spark stream`), on a
standalone master with two workers, one of them killed with SIGKILL mid-run and started again.

Live records follow the wall clock over two partitions; every 10-second window closes during
the run; two `mars reducer` processes close them. A `mars mapper` pre-aggregates the task
first; a few seconds in, the task is handed to Spark while it runs (`PATCH /tasks/{id}`
`{"preaggregation": "spark"}`), the mapper lets it go and `mars spark stream` takes over from
the offsets Redis has applied. Read with read_committed, every (window, sip, type) appears once
and equals the DuckDB oracle; results + late + bad == produced, the mapper's share and the
stream's together.
"""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from devtools.gen import GeneratorConfig
from devtools.local import ClusterState, LocalCluster
from mars.config import Settings
from tests.integration.pipeline import OracleInBackground, TopicReader, check_exact, wait_for
from tests.integration.spark.helpers import start_stream
from tests.integration.watched import (
    WatchedPipeline,
    close_every_window,
    live_producer,
    make_topic,
    scrape,
    total,
)

pytestmark = [pytest.mark.integration, pytest.mark.exclusive]

RATE = 1_000
PRODUCE_S = 40
PARTITIONS = 2
SEED = 21
SQL = (
    "SELECT sip, type, count(*) AS cnt, sum(bytes) AS total FROM {topic} "
    "GROUP BY sip, type WINDOWING 10 s"
)


@pytest.mark.pipeline(mappers=1, reducers=2)
@pytest.mark.timeout(420)
def test_spark_stream_takes_over_from_a_mapper_and_is_exact_through_a_worker_killed(
    pipeline: WatchedPipeline,
    local_cluster: LocalCluster,
    cluster: ClusterState,
    settings: Settings,
    kafka_admin: AdminClient,
    spark_master: str,
    unique_name: str,
    tmp_path: Path,
) -> None:
    topic = make_topic(kafka_admin, f"{unique_name}_src", partitions=PARTITIONS)
    task = f"{unique_name}t"
    body = pipeline.register(
        SQL.format(topic=topic), task_id=task, options={"buckets": 4, "idle_timeout": "10 m"}
    )
    assert body["spec"]["options"]["preaggregation"] == "mappers"
    stream: subprocess.Popen[bytes] | None = None
    try:
        start_s = int(time.time())
        config = GeneratorConfig(
            count=RATE * PRODUCE_S, start_s=start_s, span_s=PRODUCE_S, seed=SEED
        )
        oracle = OracleInBackground(
            config,
            group_by=["sip", "type"],
            window_ms=10_000,
            aggregates={"cnt": "count(*)", "total": "sum(bytes)"},
        )
        producer = live_producer(
            cluster.kafka_bootstrap, topic, start_s=start_s, rate=RATE, seconds=PRODUCE_S, seed=SEED
        )
        time.sleep(PRODUCE_S / 5)  # the mapper's share
        handed = pipeline.call("PATCH", f"/tasks/{task}", body={"preaggregation": "spark"})
        assert handed.status_code == 200, handed.text
        stream = start_stream(spark_master, task, pipeline, settings, log=tmp_path / "stream.log")
        time.sleep(PRODUCE_S * 2 / 5)
        assert stream.poll() is None, (tmp_path / "stream.log").read_text()[-3000:]
        local_cluster.restart("spark-worker", kill=True)  # SIGKILL mid-run, then back
        producer.join(timeout_s=PRODUCE_S * 3)
        close_every_window(
            cluster.kafka_bootstrap,
            topic,
            after_s=start_s + PRODUCE_S,
            partitions=PARTITIONS,
            client_properties=cluster.kafka_client_properties,
        )
        expected, _malformed = oracle.result(timeout_s=180)
        oracle.close()
        output = body["topics"]["output"]
        reader = TopicReader(cluster.kafka_bootstrap, [output])
        try:
            wait_for(
                lambda: sum(r["cnt"] for r in reader.values(output)) >= RATE * PRODUCE_S,
                timeout_s=180,
                what="every record counted in the results",
                logs=lambda: pipeline.logs() + (tmp_path / "stream.log").read_text()[-3000:],
                every=lambda: reader.poll_for(1.0),
            )
            reader.poll_for(3.0)
            check_exact(reader.values(output), expected, ("sip", "type"), ("cnt", "total"))
        finally:
            reader.close()
        stats = pipeline.get(f"/tasks/{task}")["stats"]
        assert stats["records_in"] == RATE * PRODUCE_S + PARTITIONS  # + the closing records
        assert stats["late"] == stats["bad"] == 0
        mappers = [scrape(a) for a in pipeline.targets().get("mapper", [])]
        mapped = total(mappers, "mars_mapper_records_in_total", task=task)
        assert 0 < mapped < RATE * PRODUCE_S  # the mapper's share; the stream did the rest
    finally:
        if stream is not None:
            stream.send_signal(signal.SIGTERM)
            assert stream.wait(timeout=60) == 0, (tmp_path / "stream.log").read_text()[-3000:]

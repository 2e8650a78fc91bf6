"""A `watermark = 'key'` task pre-aggregated by the live Spark stream (`mars spark stream`, on a
standalone master with two workers) instead of the mappers: the skewed devices of
tests/integration/test_key_watermarks.py (each in order, clocks up to four minutes apart, some
in bursts), all in Spark's hands from the start. The stream carries each partition's key clocks
beside its applied offset, as the mappers do, so the results and counters equal the DuckDB
oracle of key watermarks and no record is late; a reducer owning the task is SIGKILLed
mid-run."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from mars.config import Settings
from tests.differential.oracle import expected_of
from tests.integration.pipeline import TopicReader
from tests.integration.spark.helpers import start_stream
from tests.integration.test_key_watermarks import (
    KEY_LAG_MS,
    case_of,
    problems_when_done,
    produce_half,
)
from tests.integration.watched import WatchedPipeline, kill_an_owner, make_topic

pytestmark = [pytest.mark.integration, pytest.mark.exclusive]


@pytest.mark.pipeline(mappers=0, reducers=2)
@pytest.mark.timeout(420)
def test_the_spark_stream_keeps_key_clocks_exact(
    pipeline: WatchedPipeline,
    settings: Settings,
    kafka_admin: AdminClient,
    spark_master: str,
    unique_name: str,
    tmp_path: Path,
) -> None:
    case = case_of(KEY_LAG_MS)
    expected = expected_of(case)
    assert expected.late == 0  # every device is in order
    topic = make_topic(kafka_admin, f"{unique_name}_src", partitions=len(case.partitions))
    produce_half(pipeline, topic, case, second=False)
    task = f"{unique_name}t"
    options = {"idle_timeout": "10 m", "buckets": 2, "preaggregation": "spark"}
    body = pipeline.register(case.task_sql(topic), task_id=task, options=options)
    assert body["spec"]["options"]["watermark"] == "key"
    output = body["topics"]["output"]
    reader = TopicReader(pipeline.bootstrap, [output])
    log = tmp_path / "stream.log"
    stream: subprocess.Popen[bytes] | None = None
    try:
        stream = start_stream(spark_master, task, pipeline, settings, log=log)
        deadline = time.monotonic() + 180
        while len(reader.values(output)) < len(expected.rows) // 4:
            assert time.monotonic() < deadline, "no results\n" + log.read_text()[-3000:]
            assert stream.poll() is None, log.read_text()[-3000:]
            reader.poll_for(0.5)
        kill_an_owner(pipeline, task)
        produce_half(pipeline, topic, case, second=True)
        found = problems_when_done(pipeline, reader, task, case, expected)
    finally:
        reader.close()
        if stream is not None:
            stream.send_signal(signal.SIGTERM)
            stream.wait(timeout=60)
    assert found == [], "\n".join(found[:20]) + "\n" + log.read_text()[-3000:]

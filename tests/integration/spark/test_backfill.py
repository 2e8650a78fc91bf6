"""The Spark backfill against the real Kafka and Redis, with local Spark (local[2]).

HISTORY records are backfilled by Spark while a live-like mapper (`helpers.LiveLikeMapper`: the
SEQ protocol's writer loop over the shared engine) takes the live traffic from the hand-over
point on; the merged partials in Redis must equal an independent DuckDB recomputation over all
records, a re-run must leave Redis byte-identical, the same data from JSON-lines files must give
the same partials as from Kafka, and bad records must reach the dead-letter topic.
"""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import redis
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient

from devtools.gen import GeneratorConfig
from devtools.gen.produce import produce
from devtools.gen.tuples import iter_chunks
from mars.config import Settings
from mars.side_topics import REASON_HEADER, SOURCE_HEADER
from mars.sql import parse_task
from mars.store import SeqStore
from mars.store.backfill import BackfillCoordination
from mars.tasks.spec import TaskSpec
from mars.tasks.topics import topic_partitions
from spark.backfill_job import BackfillJob, run_backfill, topic_watermarks
from spark.sources import FileSource, KafkaSource
from spark.summary import BackfillSummary
from tests.integration.spark.helpers import (
    BACKFILL_ORACLE,
    BACKFILL_SQL,
    HISTORY_START_S,
    LiveLikeMapper,
    create_topic,
    final_results,
    history_and_live,
    merged_windows,
    read_partitions,
    task_state,
    values_of,
)
from tests.integration.task_topics import assert_task_topics_as_planned
from tests.oracle import expected_results

pytestmark = [pytest.mark.integration, pytest.mark.exclusive]

HISTORY = 50_000  # the 1,000,000-record run with the real pipeline: test_backfill_pipeline.py
LIVE = 5_000

SQL = BACKFILL_SQL + " WITH (buckets=8)"


def _name() -> str:
    return "s" + uuid.uuid4().hex[:10]


def _spec(topic: str, task_id: str) -> TaskSpec:
    return parse_task(SQL.format(topic=topic), task_id=task_id)


def _values(config: GeneratorConfig) -> list[bytes]:
    return [v for chunk in iter_chunks(config) for v in chunk.values]


def test_backfill_plus_live_equals_oracle_and_rerun_changes_nothing(
    spark: Any, settings: Settings, redis_client: redis.Redis, kafka_admin: AdminClient
) -> None:
    topic, task = _name(), _name()
    create_topic(kafka_admin, topic, partitions=4)
    bootstrap = settings.kafka.bootstrap_servers
    history, live = history_and_live(history=HISTORY, live=LIVE, seeds=(1, 2))
    produce(settings.kafka, topic, history)
    spec = _spec(topic, task)
    store = SeqStore(redis_client)
    coordination = BackfillCoordination(redis_client)

    results: list[BackfillSummary] = []
    errors: list[BaseException] = []

    def backfill() -> None:
        try:
            job = BackfillJob(spec=spec, source=KafkaSource(), job="history")
            results.append(run_backfill(spark, settings=settings, job=job))
        except BaseException as exc:  # surfaced by the main thread
            errors.append(exc)

    thread = threading.Thread(target=backfill)
    thread.start()
    deadline = time.monotonic() + 60
    while len(coordination.handovers(task)) < 4 and time.monotonic() < deadline and not errors:
        time.sleep(0.05)
    assert not errors, errors
    handovers = coordination.handovers(task)
    assert sum(handovers.values()) == HISTORY
    assert "history" in coordination.holds(task)  # the watermark is held meanwhile

    # Live traffic arrives while Spark runs; the live-like mapper starts at the hand-over.
    produce(settings.kafka, topic, live)
    ends = {p: high for p, (_low, high) in topic_watermarks(settings.kafka, topic).items()}
    mapper = LiveLikeMapper(spec, store, bootstrap=bootstrap, batch=5000)
    assert mapper.run_until(ends) == LIVE

    thread.join(timeout=200)
    assert not thread.is_alive() and not errors, errors
    summary = results[0]
    assert summary.records_read == HISTORY and summary.records_in == HISTORY
    assert summary.skipped == 0 and summary.bad == 0 and summary.late == 0
    assert coordination.holds(task) == {}

    expected = expected_results(_values(history) + _values(live), **BACKFILL_ORACLE)
    assert expected.skipped == 0
    assert final_results(spec, merged_windows(store, redis_client, spec)) == expected
    stats = store.counters.read(task)
    assert stats["records_in"] == HISTORY + LIVE and stats["accepted"] == HISTORY + LIVE

    before = task_state(redis_client, task)
    again = run_backfill(
        spark, settings=settings, job=BackfillJob(spec=spec, source=KafkaSource(), job="history")
    )
    assert again.skipped == HISTORY and again.records_in == 0 and again.datasets == 0
    assert task_state(redis_client, task) == before


def test_files_source_equals_kafka_and_bad_records_go_to_dead_letter(
    spark: Any,
    settings: Settings,
    redis_client: redis.Redis,
    kafka_admin: AdminClient,
    tmp_path: Path,
) -> None:
    topic, kafka_task, file_task = _name(), _name(), _name()
    create_topic(kafka_admin, topic, partitions=2)
    bootstrap = settings.kafka.bootstrap_servers
    config = GeneratorConfig(
        count=30_000,
        seed=7,
        start_s=HISTORY_START_S,
        span_s=3600,
        disorder_s=5,
        sip_cardinality=100,
        malformed_ratio=0.01,
    )
    report = produce(settings.kafka, topic, config)
    assert report.malformed > 0
    ends = {p: high for p, (_low, high) in topic_watermarks(settings.kafka, topic).items()}
    by_partition = read_partitions(bootstrap, topic, ends)
    for partition, records in by_partition.items():
        (tmp_path / f"part-{partition}.jsonl").write_bytes(
            b"".join(value + b"\n" for _, value in records)
        )

    store = SeqStore(redis_client)
    kafka_spec, file_spec = _spec(topic, kafka_task), _spec(topic, file_task)
    from_kafka = run_backfill(
        spark, settings=settings, job=BackfillJob(spec=kafka_spec, source=KafkaSource())
    )
    from_files = run_backfill(
        spark,
        settings=settings,
        job=BackfillJob(spec=file_spec, source=FileSource(path=str(tmp_path / "*.jsonl"))),
    )
    for summary in (from_kafka, from_files):
        assert summary.records_in == config.count and summary.bad == report.malformed
    # The backfill was the first to need the task's topics: created as every role creates them.
    assert_task_topics_as_planned(kafka_admin, kafka_spec, settings.kafka)

    kafka_windows = merged_windows(store, redis_client, kafka_spec)
    assert kafka_windows == merged_windows(store, redis_client, file_spec)
    all_values = [v for records in by_partition.values() for v in values_of(records)]
    expected = expected_results(all_values, **BACKFILL_ORACLE)
    assert expected.skipped == report.malformed
    assert final_results(kafka_spec, kafka_windows) == expected

    dead = _read_topic(bootstrap, kafka_spec.dead_letter_topic, report.malformed)
    malformed_values = sorted(all_values[i] for i in expected.skipped_indices)
    assert sorted(value for value, _ in dead) == malformed_values
    for _, headers in dead:
        assert headers[REASON_HEADER] and headers[SOURCE_HEADER].startswith(f"{topic}/".encode())
    file_dead = _read_topic(bootstrap, file_spec.dead_letter_topic, report.malformed)
    assert sorted(value for value, _ in file_dead) == malformed_values
    assert (
        store.counters.read(kafka_task)["bad"]
        == store.counters.read(file_task)["bad"]
        == report.malformed
    )


def _read_topic(bootstrap: str, topic: str, count: int) -> list[tuple[bytes, dict[str, bytes]]]:
    """The records of `topic` (value, headers), all partitions; asserts there are `count`."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": _name(), "auto.offset.reset": "earliest"}
    )
    partitions = topic_partitions(consumer, topic)
    consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
    out: list[tuple[bytes, dict[str, bytes]]] = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for message in consumer.consume(1000, timeout=1.0):
            if message.error() is None:
                raw = message.headers() or []
                pairs = raw.items() if isinstance(raw, dict) else raw
                headers = {k: v for k, v in pairs if isinstance(v, bytes)}
                out.append((message.value() or b"", headers))
        if len(out) >= count:
            break
    consumer.close()
    assert len(out) == count
    return out

"""Cumulative windows (`WINDOWING CUMULATE 1 h STEP 1 m`) under live traffic, exact through a
reducer killed with SIGKILL.

A producer sends records whose event time follows the wall clock at 120x (an hour of event time
in 30 s), over 4 partitions, slightly out of order within GRACE, while two mappers and two
reducers run. The stream covers the hour `[T0, T0 + 1 h)` and the first minutes of the next;
halfway, a reducer owning units of the task is killed: the other one rebuilds them from their
checkpoints (pending slices and running states) and a replay. Then one record per partition
three hours on closes both hours. Checked:

- every step of every group is emitted exactly once, equal to DuckDB's answer (each record
  joined to the cumulative windows `[s, s + n m)` ending after it): a group's "hour so far"
  at every minute from its first record to the hour's end, also minutes it had no record in;
- rows come out step by step while the stream runs, not all at the end;
- no record is late; a pull query and EMIT CHANGES are refused with a clear 4xx.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections import Counter
from typing import Any

import duckdb
import httpx
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from devtools.local import ClusterState
from mars.clients.kafka_config import IDEMPOTENT_PRODUCER
from tests.duckdb_rows import insert_rows
from tests.integration.pipeline import TopicReader, wait_for
from tests.integration.watched import (
    WatchedPipeline,
    kill_an_owner,
    make_topic,
    wait_taken_over,
)

pytestmark = pytest.mark.integration

PARTITIONS = 4
HOUR_MS, STEP_MS, GRACE_MS = 3_600_000, 60_000, 30_000
SQL = (
    "SELECT k, count(*) AS n, sum(v) AS total FROM {topic} GROUP BY k "
    "WINDOWING CUMULATE 1 h STEP 1 m GRACE 30 s"
)
SPEEDUP = 120  # event ms per wall ms: an hour of event time in 30 s
EVENT_SPAN_MS = HOUR_MS + 5 * STEP_MS  # the hour, and the first minutes of the next
RATE = 200  # records per wall second
KEYS = ("a", "b", "c", "d", "e", "f", "late-comer")
T0 = 1_700_002_800_000  # an hour boundary (2023-11-14T23:00Z)
Sent = list[tuple[int, int, str, int]]  # (partition, event time, key, v) in send order


@pytest.mark.pipeline(
    mappers=2,
    reducers=2,
    env={"MARS_REDUCER__CHECKPOINT_INTERVAL_MS": "1000", "MARS_MAPPER__BATCH_SIZE": "200"},
)
@pytest.mark.timeout(360)
def test_cumulate_windows_are_exact_step_by_step_through_a_reducer_killed(
    pipeline: WatchedPipeline,
    cluster: ClusterState,
    kafka_admin: AdminClient,
    unique_name: str,
) -> None:
    topic = make_topic(kafka_admin, f"{unique_name}_src", partitions=PARTITIONS)
    task = f"{unique_name}c"
    options = {"event_time": "ts", "event_time_format": "epoch_ms", "idle_timeout": "10 m"}
    refused = _post_task(pipeline, SQL.format(topic=topic) + " EMIT CHANGES", f"{task}x", options)
    assert refused.status_code == 422 and "EMIT CHANGES does not apply" in refused.text
    body = pipeline.register(SQL.format(topic=topic), task_id=task, options=options)
    assert body["spec"]["window"]["cumulate"] is True
    output, late_topic = body["topics"]["output"], f"mars.late.{task}"

    sent: Sent = []
    producing = threading.Thread(
        target=_produce, args=(cluster.kafka_bootstrap, topic, sent), daemon=True
    )
    reader = TopicReader(cluster.kafka_bootstrap, [output, late_topic])
    try:
        producing.start()
        wall_s = EVENT_SPAN_MS / SPEEDUP / 1000
        reader.poll_for(wall_s / 2)
        victim = kill_an_owner(pipeline, task)  # SIGKILL, mid-hour
        rows_at_half = len(reader.values(output))
        wait_taken_over(pipeline, task, victim, every=lambda: reader.poll_for(0.5))
        producing.join(timeout=wall_s * 3)
        assert not producing.is_alive()
        _close_both_hours(cluster.kafka_bootstrap, topic)
        expected = _expected(sent)
        wait_for(
            lambda: len(reader.values(output)) >= len(expected),
            timeout_s=120,
            what="every cumulative window",
            logs=pipeline.logs,
            every=lambda: reader.poll_for(0.5),
        )
        reader.poll_for(3.0)  # a duplicate would show up now
        results, late = reader.values(output), reader.values(late_topic)
    finally:
        reader.close()

    keys = Counter((r["window_start"], r["window_end"], r["k"]) for r in results)
    assert [key for key, n in keys.items() if n > 1] == [], "a window emitted twice"
    got = {(r["window_start"], r["window_end"], r["k"]): (r["n"], r["total"]) for r in results}
    assert got == expected
    assert late == []
    # Step by step under live traffic: the first half hour's windows came out in the first half.
    assert rows_at_half >= len(KEYS) * 10, rows_at_half
    # The late-comer first shows up at 20 minutes and is then in every later minute of the hour.
    ends = sorted(end for start, end, k in got if k == "late-comer" and start == T0)
    assert ends == list(range(T0 + 21 * STEP_MS, T0 + HOUR_MS + 1, STEP_MS))

    print(
        f"\ncumulate: {len(sent):,} records, {len(got):,} windows x groups exact, "
        f"{rows_at_half} emitted by the kill at half time"
    )
    pull = pipeline.call("GET", f"/tasks/{task}/windows")
    assert pull.status_code == 422 and "cumulative" in pull.text


def _produce(bootstrap: str, topic: str, sent: Sent) -> None:
    """Event time = T0 + SPEEDUP x the wall time since the start, up to `EVENT_SPAN_MS`, each
    record up to 20 s of event time older (within GRACE) at random."""
    rng = random.Random(5)
    producer = Producer({"bootstrap.servers": bootstrap, **IDEMPOTENT_PRODUCER})
    started = time.monotonic()
    while True:
        now = T0 + int((time.monotonic() - started) * 1000 * SPEEDUP)
        if now >= T0 + EVENT_SPAN_MS:
            break
        for _ in range(RATE // 20):
            ts = max(T0, now - rng.choice([0, 0, 0, rng.randint(0, 20_000)]))
            keys = KEYS if ts >= T0 + 20 * STEP_MS else KEYS[:-1]
            key, value, partition = rng.choice(keys), rng.randint(1, 100), rng.randrange(4)
            record = {"ts": ts, "k": key, "v": value}
            producer.produce(topic, json.dumps(record).encode(), partition=partition)
            sent.append((partition, ts, key, value))
        producer.poll(0)
        time.sleep(0.05)
    assert producer.flush(30) == 0


def _close_both_hours(bootstrap: str, topic: str) -> None:
    """One record per partition three hours on: every window of the two hours closes (the
    records' own hour stays open, so they are in no result)."""
    producer = Producer({"bootstrap.servers": bootstrap, **IDEMPOTENT_PRODUCER})
    for partition in range(PARTITIONS):
        record = {"ts": T0 + 3 * HOUR_MS, "k": "closer", "v": 0}
        producer.produce(topic, json.dumps(record).encode(), partition=partition)
    assert producer.flush(30) == 0


def _expected(sent: Sent) -> dict[tuple[int, int, str], tuple[int, int]]:
    """DuckDB: each record in every cumulative window of its hour ending after it (the
    disorder stays within GRACE, so none is late and every such window counts it)."""
    con = duckdb.connect()
    try:
        con.execute("CREATE TABLE r (p INT, ts BIGINT, k VARCHAR, v BIGINT)")
        insert_rows(con, "r", sent)
        rows = con.execute(
            f"""
            WITH hours AS (SELECT *, ts - ts % {HOUR_MS} AS window_start FROM r),
            assigned AS (
                SELECT *, unnest(generate_series(
                    window_start + {STEP_MS}, window_start + {HOUR_MS}, CAST({STEP_MS} AS BIGINT)
                )) AS window_end
                FROM hours
            )
            SELECT window_start, window_end, k, count(*), sum(v) FROM assigned
            WHERE window_end > ts GROUP BY window_start, window_end, k
            """
        ).fetchall()
    finally:
        con.close()
    return {(start, end, k): (n, total) for start, end, k, n, total in rows}


def _post_task(
    pipeline: WatchedPipeline, sql: str, task_id: str, options: dict[str, Any]
) -> httpx.Response:
    return pipeline.call(
        "POST",
        "/tasks",
        body={"sql": sql, "id": task_id, "options": options},
        timeout=60,
    )

"""Session windows under live traffic, with two mappers and two reducers as real processes.

Users on two partitions send bursts of events (seconds apart) separated by pauses longer than
the gap, so sessions open and close all through the run; small batches cut sessions across
batches and both mappers; some records come out of order within GRACE (accepted, merged into
their session) and some beyond it (late). A reducer is killed with SIGKILL while sessions are
open: its units move to the other reducer, which rebuilds them from the checkpoint and a
replay. Checked against the DuckDB oracle (tests/session_oracle.py): every session exactly, none
twice, and every record either in a session or on the late topic. The task emits changes: on
its compacted updates topic the last record of each key is exactly the final sessions (merged-
away sessions' keys end in a tombstone), besides the one session left open.
"""

from __future__ import annotations

import json
import random
import threading
import time
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from devtools.local import ClusterState
from mars.clients.kafka_config import IDEMPOTENT_PRODUCER
from tests.integration.pipeline import TopicReader, wait_for
from tests.integration.watched import (
    WatchedPipeline,
    kill_an_owner,
    make_topic,
    wait_taken_over,
)
from tests.session_oracle import Session, expected_sessions

pytestmark = pytest.mark.integration

PARTITIONS = 2
GAP_MS, GRACE_MS = 3_000, 2_000
SQL = (
    "SELECT uid, count(*) AS n, sum(amount) AS total FROM {topic} GROUP BY uid "
    "WINDOWING SESSION 3 s GRACE 2 s EMIT CHANGES EVERY 1 s"
)
PRODUCE_S = 30
USERS = 24
CLOSER = "closer"  # one record per partition at the end: its sessions stay open


@pytest.mark.pipeline(
    mappers=2,
    reducers=2,
    env={
        "MARS_REDUCER__CHECKPOINT_INTERVAL_MS": "1000",
        "MARS_MAPPER__BATCH_SIZE": "40",  # sessions span many batches and both mappers
    },
)
@pytest.mark.timeout(300)
def test_session_windows_are_exact_through_a_reducer_killed_mid_session(
    pipeline: WatchedPipeline,
    cluster: ClusterState,
    kafka_admin: AdminClient,
    unique_name: str,
) -> None:
    topic = make_topic(kafka_admin, f"{unique_name}_src", partitions=PARTITIONS)
    task = f"{unique_name}s"
    body = pipeline.register(
        SQL.format(topic=topic),
        task_id=task,
        options={"event_time_format": "epoch_ms", "idle_timeout": "10 m", "buckets": 4},
    )
    assert body["spec"]["window"]["session"] is True

    sent: list[tuple[int, str, int, int]] = []
    producing = threading.Thread(
        target=_produce_sessions, args=(cluster.kafka_bootstrap, topic, sent), daemon=True
    )
    producing.start()
    time.sleep(PRODUCE_S / 2)
    victim = kill_an_owner(pipeline, task)  # SIGKILL, while sessions are open
    wait_taken_over(pipeline, task, victim)
    producing.join(timeout=PRODUCE_S * 3)
    assert not producing.is_alive()

    expected = expected_sessions(sent, gap_ms=GAP_MS, grace_ms=GRACE_MS)
    wanted = {key: s for key, s in expected.sessions.items() if key[0] != CLOSER}
    assert len(wanted) >= 3 * USERS, len(wanted)  # several sessions per user
    assert expected.late > 0  # the test sends some records beyond GRACE

    output, late_topic, updates = (
        body["topics"]["output"],
        f"mars.late.{task}",
        f"mars.updates.{task}",
    )
    reader = TopicReader(cluster.kafka_bootstrap, [output, late_topic, updates])
    try:
        wait_for(
            lambda: len(reader.values(output)) >= len(wanted),
            timeout_s=120,
            what="every session's result",
            logs=pipeline.logs,
            every=lambda: reader.poll_for(0.5),
        )
        reader.poll_for(3.0)
        results, late = reader.values(output), reader.values(late_topic)
        compacted = _compacted(reader.records[updates])
        tombstones = sum(1 for _key, value in reader.records[updates] if value is None)
    finally:
        reader.close()

    keys = [(r["uid"], r["window_start"]) for r in results]
    assert len(keys) == len(set(keys)), "a session was emitted twice"
    got = {
        (r["uid"], r["window_start"]): Session(
            last_ms=r["window_end"], count=r["n"], total=r["total"]
        )
        for r in results
    }
    assert got == wanted
    reducer_late = [x for x in late if x.get("source") == "reducer"]
    assert reducer_late == []  # no partition went idle
    mapper_late = len(late) - len(reducer_late)
    assert mapper_late == expected.late
    closers = sum(1 for _, key, _, _ in sent if key == CLOSER)
    assert sum(s.count for s in got.values()) + mapper_late + closers == len(sent)

    # EMIT CHANGES: what a consumer of the compacted updates topic ends with.
    assert tombstones > 0  # out-of-order records gave sessions earlier first times (93 of 450)
    finals = {key: row for key, row in compacted.items() if row.pop("final")}
    assert {row["uid"] for key, row in compacted.items() if key not in finals} == {CLOSER}
    assert sorted(finals.values(), key=_row_order) == sorted(results, key=_row_order)

    # A pull query: the one open session left is the closers' (both partitions, same time).
    [(_, end_ms)] = [key for key in expected.sessions if key[0] == CLOSER]
    wait_for(
        lambda: _open_sessions(pipeline, task) == [(CLOSER, end_ms, end_ms, closers)],
        timeout_s=30,
        what="the open session in a pull query",
    )


def _compacted(records: list[tuple[bytes, bytes | None]]) -> dict[bytes, dict[str, Any]]:
    """The topic as compaction leaves it: the last value per key, tombstoned keys gone."""
    last: dict[bytes, bytes | None] = {}
    for key, value in records:
        last[key] = value
    return {key: json.loads(value) for key, value in last.items() if value is not None}


def _row_order(row: dict[str, Any]) -> tuple[str, int]:
    return (row["uid"], row["window_start"])


def _open_sessions(pipeline: WatchedPipeline, task: str) -> list[tuple[str, int, int, int]]:
    rows = pipeline.get(f"/tasks/{task}/windows")["rows"]
    return [(r["uid"], r["window_start"], r["window_end"], r["n"]) for r in rows if not r["final"]]


def _produce_sessions(bootstrap: str, topic: str, sent: list[tuple[int, str, int, int]]) -> None:
    """Live bursts per user (event time = the wall clock, with disorder), then the closers."""
    rng = random.Random(7)
    producer = Producer({"bootstrap.servers": bootstrap, **IDEMPOTENT_PRODUCER})
    # Per user: the wall-clock time its current burst ends and its next one starts.
    bursts = {f"u{i}": (0.0, 0.0) for i in range(USERS)}
    started = time.time()
    while time.time() - started < PRODUCE_S:
        now = time.time()
        for user, (burst_end, next_start) in list(bursts.items()):
            if now >= next_start and now >= burst_end:  # start a burst of 1-5 s
                burst_end = now + rng.uniform(1, 5)
                next_start = burst_end + rng.uniform(4, 8)  # a pause longer than the gap
                bursts[user] = (burst_end, next_start)
            if now < burst_end and rng.random() < 0.3:
                ts = int(now * 1000) - rng.choice([0, 0, 0, 0, 300, 1_500, 4_000])
                _send(producer, topic, sent, user, ts, rng)
        time.sleep(0.02)
    end_ms = int(time.time() * 1000) + 3_600_000  # an hour on: every session closes
    for partition in range(PARTITIONS):
        _send(producer, topic, sent, CLOSER, end_ms, rng, partition=partition)
    assert producer.flush(30) == 0


def _send(
    producer: Producer,
    topic: str,
    sent: list[tuple[int, str, int, int]],
    user: str,
    ts: int,
    rng: random.Random,
    *,
    partition: int | None = None,
) -> None:
    partition = rng.randrange(PARTITIONS) if partition is None else partition
    amount = rng.randrange(100)
    value: dict[str, Any] = {"uid": user, "timestamp": ts, "amount": amount}
    producer.produce(topic, json.dumps(value).encode(), partition=partition)
    producer.poll(0)
    sent.append((partition, user, ts, amount))

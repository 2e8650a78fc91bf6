"""Every statistics aggregate over live nested JSON, with two mappers and two reducers as real
processes and a reducer killed with SIGKILL mid-window.

Devices (skewed: a few send most records) report a latency and a status code nested under
`m`, their id under `dev`; timestamps repeat (several records per millisecond) and some values
are NULL or missing. One task computes APPROX_PERCENTILE (one fraction and a list),
APPROX_MEDIAN, STDDEV, STDDEV_POP, VAR_POP, VARIANCE, TOPK, FIRST, LAST, COUNT_IF and a SUM
with FILTER per device and 10 s window. Records whose `m` is not an object are bad:
dead-lettered, counted nowhere else. While windows are open, a reducer owning units of the
task is SIGKILLed; its units move to the other reducer, which rebuilds them from the
checkpoint and a replay.

Checked against DuckDB over the records sent: every window and device once, every exact
aggregate equal (floats within rounding), each percentile within its stated rank error (exact
for groups of at most 200 values).
"""

from __future__ import annotations

import json
import math
import random
import threading
import time
from typing import Any

import duckdb
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from devtools.local import ClusterState
from mars.aggregates.quantiles import RANK_ERROR
from mars.aggregates.quantiles import K as KLL_EXACT_UP_TO
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

PARTITIONS = 2
WINDOW_MS = 10_000
PRODUCE_S = 30
DEVICES = 12
SQL = """
SELECT dev.id AS device, count(*) AS n,
       approx_percentile(m.lat, 0.9) AS p90,
       approx_percentile(m.lat, [0.5, 0.99]) AS p50_p99,
       approx_median(m.lat) AS med,
       stddev(m.lat) AS sd,
       stddev_pop(m.lat) AS sdp,
       var_pop(m.lat) AS vp,
       variance(m.lat) AS vs,
       topk(m.code, 2) AS top_codes,
       first(m.code) AS first_code,
       last(m.code) AS last_code,
       count_if(m.code >= 500) AS errors,
       sum(m.lat) FILTER (WHERE m.code = 200) AS ok_lat
FROM {topic} GROUP BY dev.id WINDOWING 10 s GRACE 1 s
"""
# The same per (window, device), exact, in DuckDB over the records sent (`lat` NULL where
# missing). FIRST/LAST: the value at the earliest/latest time, ties by the value.
ORACLE = """
SELECT window_start, device, count(*) AS n,
       stddev_samp(lat) AS sd, stddev_pop(lat) AS sdp, var_pop(lat) AS vp, var_samp(lat) AS vs,
       (min({'t': ts, 'v': code}) FILTER (WHERE code IS NOT NULL)).v AS first_code,
       (max({'t': ts, 'v': code}) FILTER (WHERE code IS NOT NULL)).v AS last_code,
       count(*) FILTER (WHERE code >= 500) AS errors,
       sum(lat) FILTER (WHERE code = 200) AS ok_lat,
       list(lat ORDER BY lat) FILTER (WHERE lat IS NOT NULL) AS lats,
       list(code) FILTER (WHERE code IS NOT NULL) AS codes
FROM (SELECT ts - ts % 10000 AS window_start, * FROM sent)
GROUP BY window_start, device
"""
EXACT_FIELDS = ("n", "first_code", "last_code", "errors")
FLOAT_FIELDS = ("sd", "sdp", "vp", "vs", "ok_lat")


@pytest.mark.pipeline(
    mappers=2,
    reducers=2,
    env={
        "MARS_REDUCER__CHECKPOINT_INTERVAL_MS": "1000",
        "MARS_MAPPER__BATCH_SIZE": "200",  # a window's groups span many batches and both mappers
    },
)
@pytest.mark.timeout(300)
def test_every_statistic_over_nested_json_is_exact_through_a_reducer_killed_mid_window(
    pipeline: WatchedPipeline,
    cluster: ClusterState,
    kafka_admin: AdminClient,
    unique_name: str,
) -> None:
    topic = make_topic(kafka_admin, f"{unique_name}_src", partitions=PARTITIONS)
    task = f"{unique_name}t"
    body = pipeline.register(
        SQL.format(topic=topic),
        task_id=task,
        options={
            "event_time": "ts",
            "event_time_format": "epoch_ms",
            "buckets": 4,
            "idle_timeout": "10 m",  # only the closers close windows
        },
    )
    sent: list[dict[str, Any]] = []
    bad: list[bytes] = []
    producing = threading.Thread(
        target=_produce, args=(cluster.kafka_bootstrap, topic, sent, bad), daemon=True
    )
    producing.start()
    time.sleep(PRODUCE_S / 2)
    victim = kill_an_owner(pipeline, task)
    wait_taken_over(pipeline, task, victim)
    producing.join(timeout=PRODUCE_S * 3)
    assert not producing.is_alive()

    expected = _expected(sent)
    assert len(expected) >= 3 * DEVICES and bad
    output, dead_letters = body["topics"]["output"], f"mars.dlq.{task}"
    reader = TopicReader(cluster.kafka_bootstrap, [output, dead_letters])
    try:
        wait_for(
            lambda: (
                len(reader.values(output)) >= len(expected)
                and len(reader.records[dead_letters]) >= len(bad)
            ),
            timeout_s=120,
            what="every window's result and every bad record",
            logs=pipeline.logs,
            every=lambda: reader.poll_for(0.5),
        )
        reader.poll_for(3.0)
        results = reader.values(output)
        dead = len(reader.records[dead_letters])
    finally:
        reader.close()

    keys = [(r["window_start"], r["device"]) for r in results]
    assert len(keys) == len(set(keys)), "a window was emitted twice"
    assert set(keys) == set(expected)
    assert dead == len(bad)
    for row in results:
        _check(row, expected[(row["window_start"], row["device"])])


def _check(row: dict[str, Any], want: dict[str, Any]) -> None:
    where = (row["window_start"], row["device"])
    for name in EXACT_FIELDS:
        assert row[name] == want[name], (where, name, row[name], want[name])
    for name in FLOAT_FIELDS:
        if want[name] is None:
            assert row[name] is None, (where, name)
        else:
            assert math.isclose(row[name], want[name], rel_tol=1e-9, abs_tol=1e-9), (where, name)
    lats: list[float] = want["lats"]
    pair = row["p50_p99"]
    if not lats:  # (a group whose records all lack `lat`: rare devices, a few records a window)
        assert pair is None, (where, pair)  # a list of fractions over no value is NULL
        pair = [None, None]
    for fraction, value in (
        (0.9, row["p90"]),
        (0.5, pair[0]),
        (0.99, pair[1]),
        (0.5, row["med"]),
    ):
        _within_rank(lats, fraction, value, where)
    counts: dict[int, int] = {}
    for code in want["codes"]:
        counts[code] = counts.get(code, 0) + 1
    top = sorted(counts, key=lambda code: (-counts[code], code))[:2]
    assert row["top_codes"] == (top or None), (where, row["top_codes"], counts)


def _within_rank(values: list[float], fraction: float, found: float | None, where: Any) -> None:
    """`found`'s rank among `values` is within the rank error of `fraction` (any value of the
    group whose rank range meets [fraction - error, fraction + error]); exact at most 200."""
    if not values:
        assert found is None, where
        return
    assert found is not None, where
    n = len(values)
    error = 0.0 if n <= KLL_EXACT_UP_TO else RANK_ERROR
    below = sum(1 for v in values if v < found) / n
    at_most = sum(1 for v in values if v <= found) / n
    assert below - error <= fraction <= at_most + error, (where, fraction, found, below, at_most)


def _expected(sent: list[dict[str, Any]]) -> dict[tuple[int, str], dict[str, Any]]:
    db = duckdb.connect()
    db.execute("CREATE TABLE sent (ts BIGINT, device VARCHAR, lat DOUBLE, code BIGINT)")
    insert_rows(
        db,
        "sent",
        [(r["ts"], r["device"], r["lat"], r["code"]) for r in sent],
    )
    cursor = db.execute(ORACLE)
    names = [d[0] for d in cursor.description]
    rows = [dict(zip(names, values, strict=True)) for values in cursor.fetchall()]
    return {(r["window_start"], r["device"]): r for r in rows}


def _produce(bootstrap: str, topic: str, sent: list[dict[str, Any]], bad: list[bytes]) -> None:
    """Live records (event time = the wall clock, repeated), then one record per partition an
    hour on, which closes every window before it (its own window, of device `closer`, stays
    open and is not expected)."""
    rng = random.Random(11)
    producer = Producer({"bootstrap.servers": bootstrap, **IDEMPOTENT_PRODUCER})
    weights = [1 / (i + 1) for i in range(DEVICES)]  # skewed: d0 sends most
    started = time.time()
    while time.time() - started < PRODUCE_S:
        now_ms = int(time.time() * 1000)
        for _ in range(rng.randrange(1, 8)):  # several records per millisecond
            device = f"d{rng.choices(range(DEVICES), weights)[0]}"
            partition = rng.randrange(PARTITIONS)
            if rng.random() < 0.01:
                value = json.dumps({"ts": now_ms, "dev": {"id": device}, "m": "oops"}).encode()
                producer.produce(topic, value, partition=partition)
                bad.append(value)
                continue
            lat = None if rng.random() < 0.05 else round(rng.lognormvariate(3, 1), 3)
            code = rng.choice([200, 200, 200, 200, 404, 500, 503, None])
            m: dict[str, Any] = {}
            if lat is not None or rng.random() < 0.5:
                m["lat"] = lat  # missing or null: both NULL
            if code is not None:
                m["code"] = code
            record = {"ts": now_ms, "dev": {"id": device, "site": "s1"}, "m": m}
            producer.produce(topic, json.dumps(record).encode(), partition=partition)
            sent.append({"ts": now_ms, "device": device, "lat": lat, "code": code})
        producer.poll(0)
        time.sleep(0.01)
    closer = {"ts": int(time.time() * 1000) + 3_600_000, "dev": {"id": "closer"}, "m": {}}
    for partition in range(PARTITIONS):
        producer.produce(topic, json.dumps(closer).encode(), partition=partition)
    assert producer.flush(30) == 0

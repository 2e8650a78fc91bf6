"""Hundreds of thousands of groups in one 10-minute window under live traffic, exact through a
reducer SIGKILLed after several incremental checkpoints (docs/reducer.md, "Incremental
checkpoints").

Per-address statistics, `SELECT dip, count(*), sum(bytes) ... GROUP BY dip WINDOWING 10 m`,
with the open windows in columns (`reducer.columnar_state`). A producer sends every one of
`MARS_MANY_GROUPS` addresses (default 100,000; the issue's 1,000,000 in long mode:
`MARS_MANY_GROUPS=1000000`) twice, in two random orders, over 4 partitions, event time
following the wall clock at 10x inside one window, while two mappers and two reducers run.
Once a unit's committed checkpoint is a chain of a full checkpoint and at least two deltas
(its owner publishes the chain after each commit), the unit's owner is killed with SIGKILL
with the stream still running; its units are rebuilt from the chain and a replay. Then one
record per partition hours on closes the window. Checked: every address comes out once,
equal to DuckDB's count and sum, and nothing is late. Printed: the surviving reducers' peak
RSS (it then holds every unit) and their checkpoints (how many, how many deltas, mean time).
`MARS_MANY_GROUPS_WINDOW_M` sets another window length (minutes).
"""

from __future__ import annotations

import json
import os
import random
import threading
import time
from collections import Counter

import duckdb
import polars as pl
import pytest
import redis
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from benchmarks.procstat import peak_rss_mb, rss_mb
from devtools.local import ClusterState
from mars.store import SeqStore
from mars.store.reducer_stats import chain_fields
from tests.integration.pipeline import TopicReader, wait_for
from tests.integration.watched import (
    WatchedPipeline,
    kill_member,
    make_topic,
    scrape,
    total,
    wait_taken_over,
)

pytestmark = [pytest.mark.integration, pytest.mark.exclusive]

GROUPS = int(os.environ.get("MARS_MANY_GROUPS", "100000"))
WINDOW_M = int(os.environ.get("MARS_MANY_GROUPS_WINDOW_M", "10"))
PARTITIONS = 4
WINDOW_MS = WINDOW_M * 60_000
T0 = 1_700_002_800_000  # an hour boundary
SPEEDUP = 10  # event ms per wall ms
PRODUCE_S = max(20.0, 2 * GROUPS / 25_000)  # records go out evenly over this many seconds
DELTAS_BEFORE_KILL = 2
SQL = (
    "SELECT dip, count(*) AS n, sum(bytes) AS total FROM {topic} GROUP BY dip "
    f"WINDOWING {WINDOW_M} m"
)
Sent = list[tuple[str, int]]  # (dip, bytes)


COLUMNS = {
    "MARS_REDUCER__COLUMNAR_STATE": "true",
    "MARS_REDUCER__CHECKPOINT_INTERVAL_MS": "1000",
}


@pytest.mark.pipeline(mappers=2, reducers=2, env=COLUMNS)
@pytest.mark.timeout(300 + int(GROUPS / 2_000))
def test_many_groups_are_exact_through_a_reducer_killed_after_incremental_checkpoints(
    pipeline: WatchedPipeline,
    cluster: ClusterState,
    kafka_admin: AdminClient,
    unique_name: str,
) -> None:
    _many_groups_through_a_kill(pipeline, cluster, kafka_admin, unique_name)


# 256 KiB of frames per owner: a unit's merged frame of its 12,500 addresses (of 100,000) is
# about 0.5 MB, so every owner spills its window and reads it back at each compaction.
@pytest.mark.pipeline(
    mappers=2, reducers=2, env={**COLUMNS, "MARS_REDUCER__STATE_BUDGET_BYTES": "262144"}
)
@pytest.mark.timeout(300 + int(GROUPS / 2_000))
def test_many_groups_spilled_to_disk_are_exact_through_a_reducer_killed(
    pipeline: WatchedPipeline,
    cluster: ClusterState,
    kafka_admin: AdminClient,
    unique_name: str,
) -> None:
    spilled = _many_groups_through_a_kill(pipeline, cluster, kafka_admin, unique_name)
    assert spilled > 0, "no owner spilled a window"


def _many_groups_through_a_kill(
    pipeline: WatchedPipeline,
    cluster: ClusterState,
    kafka_admin: AdminClient,
    unique_name: str,
) -> float:
    """Run the module's scenario, check it; the windows the survivors spilled (a counter)."""
    idle = {m: rss_mb(p["pid"]) for m, p in pipeline.get("/cluster")["members"].items()}
    topic = make_topic(kafka_admin, f"{unique_name}_src", partitions=PARTITIONS)
    task = f"{unique_name}g"
    options = {"event_time": "ts", "event_time_format": "epoch_ms", "idle_timeout": "10 m"}
    body = pipeline.register(SQL.format(topic=topic), task_id=task, options=options)
    output, late_topic = body["topics"]["output"], f"mars.late.{task}"
    store = SeqStore(redis.Redis.from_url(cluster.redis_url))

    sent: Sent = []
    producing = threading.Thread(
        target=_produce, args=(cluster.kafka_bootstrap, topic, sent), daemon=True
    )
    reader = TopicReader(cluster.kafka_bootstrap, [output, late_topic])
    try:
        producing.start()
        chains: dict[int, list[str]] = {}

        def some_chain_has_deltas() -> bool:
            chains.clear()
            for bucket, figures in store.reducer_stats.units(task).items():
                chains[bucket] = chain_fields(figures.get("checkpoint"))
            return any(len(chain) > DELTAS_BEFORE_KILL for chain in chains.values())

        wait_for(
            some_chain_has_deltas,
            timeout_s=PRODUCE_S * 3,
            what=f"a unit's committed checkpoint with {DELTAS_BEFORE_KILL} deltas",
            logs=pipeline.logs,
        )
        assert producing.is_alive(), "the stream ended before the kill"
        bucket, chain = max(chains.items(), key=lambda item: len(item[1]))
        victim = store.reducer_stats.units(task)[bucket]["owner"]
        kill_member(pipeline, victim)
        sent_at_kill = len(sent)
        wait_taken_over(pipeline, task, victim)
        producing.join(timeout=PRODUCE_S * 4)
        assert not producing.is_alive()
        _close_the_window(cluster.kafka_bootstrap, topic)
        wait_for(
            lambda: len(reader.values(output)) >= GROUPS,
            timeout_s=120 + GROUPS / 2_000,
            what="every address's row",
            logs=pipeline.logs,
            every=lambda: reader.poll_for(1.0),
        )
        reader.poll_for(3.0)  # a duplicate would show up now
        results, late = reader.values(output), reader.values(late_topic)
        survivors, spilled = _survivors_figures(pipeline, task, idle)
    finally:
        reader.close()

    assert len(sent) == 2 * GROUPS
    seen = Counter(row["dip"] for row in results)
    assert [dip for dip, n in seen.items() if n > 1] == [], "an address emitted twice"
    assert {row["window_start"] for row in results} == {T0}
    got = {row["dip"]: (row["n"], row["total"]) for row in results}
    assert got == _expected(sent)
    assert late == []
    print(
        f"\nmany groups: {GROUPS:,} addresses, {len(sent):,} records; unit {bucket}'s owner "
        f"killed after {sent_at_kill:,} records with a committed chain of {len(chain)}: {chain}"
        f"\n  surviving reducers: {survivors}"
    )
    return spilled


def _produce(bootstrap: str, topic: str, sent: Sent) -> None:
    """Every address twice (two random orders), evenly over `PRODUCE_S` wall seconds; event
    time = T0 + SPEEDUP x the wall time since the start (inside the window: 10 x 80 s at most
    is 800 s, so long modes slow the clock down)."""
    rng = random.Random(7)
    order = [*rng.sample(range(GROUPS), GROUPS), *rng.sample(range(GROUPS), GROUPS)]
    speedup = min(SPEEDUP, (WINDOW_MS - 60_000) / (PRODUCE_S * 1000))
    producer = Producer(
        {"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 20}
    )
    started = time.monotonic()
    per_tick = max(1, int(len(order) / PRODUCE_S / 20))
    for at in range(0, len(order), per_tick):
        elapsed = time.monotonic() - started
        ts = min(T0 + int(elapsed * 1000 * speedup), T0 + WINDOW_MS - 1)
        for i in order[at : at + per_tick]:
            dip = f"10.{i >> 16}.{(i >> 8) & 0xFF}.{i & 0xFF}"
            value = rng.randint(40, 1500)
            record = json.dumps({"ts": ts, "dip": dip, "bytes": value}).encode()
            producer.produce(topic, record, partition=rng.randrange(PARTITIONS))
            sent.append((dip, value))
        producer.poll(0)
        ahead = (at + per_tick) / len(order) * PRODUCE_S - (time.monotonic() - started)
        if ahead > 0:
            time.sleep(ahead)
    assert producer.flush(60) == 0


def _survivors_figures(
    pipeline: WatchedPipeline, task: str, idle: dict[str, float | None]
) -> tuple[str, float]:
    """The running reducers' peak RSS, their RSS before the task (`idle`) and the growth per
    group, their checkpoints of `task` and the windows they spilled (from their metrics); and
    that count."""
    members = pipeline.get("/cluster")["members"]
    peaks = {member: peak_rss_mb(found["pid"]) for member, found in members.items()}
    scrapes = [scrape(address) for address in pipeline.targets().get("reducer", [])]
    count = total(scrapes, "mars_reducer_checkpoint_duration_seconds_count", task=task)
    seconds = total(scrapes, "mars_reducer_checkpoint_duration_seconds_sum", task=task)
    deltas = total(scrapes, "mars_reducer_checkpoint_deltas_total", task=task)
    mean_ms = seconds / count * 1000 if count else float("nan")
    spilled = total(scrapes, "mars_reducer_spilled_windows_total", task=task)
    memory = [
        f"{peak:.0f} MiB ({before:.0f} idle: {(peak - before) * 2**20 / GROUPS:.0f} B per group)"
        for member, peak in peaks.items()
        if peak and (before := idle.get(member))
    ]
    return (
        f"peak RSS {', '.join(memory)}; "
        f"{count:.0f} checkpoints, {deltas:.0f} of them deltas, {mean_ms:.0f} ms on average; "
        f"{spilled:.0f} windows spilled"
    ), spilled


def _close_the_window(bootstrap: str, topic: str) -> None:
    """One record per partition hours on: the window closes (the record's own stays open)."""
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for partition in range(PARTITIONS):
        record = {"ts": T0 + 3 * 3_600_000, "dip": "closer", "bytes": 0}
        producer.produce(topic, json.dumps(record).encode(), partition=partition)
    assert producer.flush(30) == 0


def _expected(sent: Sent) -> dict[str, tuple[int, int]]:
    """DuckDB: count and sum per address (every record is in the one window)."""
    con = duckdb.connect()
    try:
        con.register("r", pl.DataFrame(sent, schema=["dip", "bytes"], orient="row").to_arrow())
        rows = con.execute("SELECT dip, count(*), sum(bytes) FROM r GROUP BY dip").fetchall()
    finally:
        con.close()
    return {dip: (n, total) for dip, n, total in rows}

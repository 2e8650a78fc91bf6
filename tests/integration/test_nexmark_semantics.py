"""Two Nexmark queries over a bid stream as a new user sends it: JSON bids, `dateTime` in epoch
milliseconds, 4 partitions, each in time order, several bids per millisecond.

- q11, bids per bidder session (`WINDOWING SESSION 10 s`, GRACE 0): every record counted (none
  late: records sharing a timestamp are on time) and every session equal to the DuckDB
  oracle's (tests/session_oracle.py).
- q7 with a filter (`max(price) ... WHERE auction >= 0 WINDOWING 10 s`): the stream ends with
  one bid per partition a day later that WHERE drops; every window closes within seconds of
  it (idle close is 10 minutes away), exactly.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator

import pytest
from confluent_kafka.admin import AdminClient

from devtools.local import ClusterState
from tests.integration.pipeline import TopicReader, produce_in_order, wait_for
from tests.integration.watched import WatchedPipeline, make_topic
from tests.session_oracle import Session, expected_sessions

pytestmark = pytest.mark.integration

PARTITIONS = 4
START_MS = 1_700_000_000_000
OPTIONS = {"event_time": "dateTime", "event_time_format": "epoch_ms"}
DAY_MS = 86_400_000


def bids(rng: random.Random, *, count: int, span_ms: int) -> Iterator[tuple[int, dict[str, int]]]:
    """(partition, bid) in time order per partition: hot bidders and auctions, log-uniform
    prices, a few bids per millisecond (so timestamps repeat), cold bidders seconds apart."""
    per_partition = count // PARTITIONS
    for partition in range(PARTITIONS):
        now = START_MS
        step = 2 * span_ms // per_partition  # mean gap between distinct milliseconds
        for _ in range(per_partition):
            if rng.random() < 0.6:  # else the same millisecond as the previous bid
                now += rng.randint(1, step)
            hot = rng.random() < 0.5
            yield (
                partition,
                {
                    "auction": rng.randint(0, 9) if hot else rng.randint(10, 999),
                    "bidder": rng.randint(0, 19) if hot else rng.randint(20, 499),
                    "price": int(10 ** rng.uniform(2, 6)),
                    "dateTime": now,
                },
            )


def produce(bootstrap: str, topic: str, records: list[tuple[int, dict[str, int]]]) -> None:
    produce_in_order(bootstrap, topic, ((p, json.dumps(bid).encode()) for p, bid in records))


@pytest.mark.pipeline(mappers=2, reducers=2)
@pytest.mark.timeout(300)
def test_q11_sessions_count_every_bid_sharing_a_millisecond(
    pipeline: WatchedPipeline, cluster: ClusterState, kafka_admin: AdminClient, unique_name: str
) -> None:
    topic = make_topic(kafka_admin, f"{unique_name}_bids", partitions=PARTITIONS)
    records = list(bids(random.Random(11), count=40_000, span_ms=300_000))
    produce(cluster.kafka_bootstrap, topic, records)
    task = f"{unique_name}q11"
    body = pipeline.register(
        f"SELECT bidder, count(*) AS bid_count FROM {topic} GROUP BY bidder WINDOWING SESSION 10 s",
        task_id=task,
        options={**OPTIONS, "idle_timeout": "2 s"},
    )
    times = [bid["dateTime"] for _, bid in records]
    assert len(times) - len(set(times)) > len(times) // 3  # timestamps repeat a lot
    expected = expected_sessions(
        [(p, str(bid["bidder"]), bid["dateTime"], 0) for p, bid in records],
        gap_ms=10_000,
        grace_ms=0,
    )
    assert expected.late == 0 and len(expected.sessions) > 1_000

    reader = TopicReader(cluster.kafka_bootstrap, [body["topics"]["output"]])
    try:
        wait_for(
            lambda: len(reader.values(body["topics"]["output"])) >= len(expected.sessions),
            timeout_s=120,
            what="every session",
            logs=pipeline.logs,
            every=lambda: reader.poll_for(0.5),
        )
        reader.poll_for(2.0)
        rows = reader.values(body["topics"]["output"])
    finally:
        reader.close()
    got = {
        (str(r["bidder"]), r["window_start"]): Session(
            last_ms=r["window_end"], count=r["bid_count"], total=0
        )
        for r in rows
    }
    assert len(got) == len(rows), "a session was emitted twice"
    assert got == expected.sessions
    stats = pipeline.get(f"/tasks/{task}")["stats"]
    assert (stats["records_in"], stats["late"], stats["bad"]) == (len(records), 0, 0)


@pytest.mark.pipeline(mappers=2, reducers=2)
@pytest.mark.timeout(300)
def test_q7_windows_close_on_records_the_where_drops(
    pipeline: WatchedPipeline, cluster: ClusterState, kafka_admin: AdminClient, unique_name: str
) -> None:
    topic = make_topic(kafka_admin, f"{unique_name}_bids", partitions=PARTITIONS)
    records = list(bids(random.Random(7), count=20_000, span_ms=60_000))
    task = f"{unique_name}q7"
    body = pipeline.register(
        f"SELECT max(price) AS maxprice FROM {topic} WHERE auction >= 0 WINDOWING 10 s",
        task_id=task,
        options={**OPTIONS, "idle_timeout": "10 m"},  # idle close cannot be what closes them
    )
    output = body["topics"]["output"]
    expected: dict[int, int] = {}
    for _, bid in records:
        start = bid["dateTime"] - bid["dateTime"] % 10_000
        expected[start] = max(expected.get(start, 0), bid["price"])
    last = max(bid["dateTime"] for _, bid in records)
    produce(cluster.kafka_bootstrap, topic, records)
    # One bid per partition a day later, which WHERE drops: it carries event time forward.
    filtered = {"auction": -1, "bidder": 0, "price": 1, "dateTime": last + DAY_MS}
    produce(cluster.kafka_bootstrap, topic, [(p, filtered) for p in range(PARTITIONS)])

    reader = TopicReader(cluster.kafka_bootstrap, [output])
    try:
        waited = wait_for(
            lambda: len(reader.values(output)) >= len(expected),
            timeout_s=60,
            what="every window",
            logs=pipeline.logs,
            every=lambda: reader.poll_for(0.5),
        )
        reader.poll_for(2.0)
        rows = reader.values(output)
    finally:
        reader.close()
    print(f"q7: every window out {waited:.1f} s after the filtered records were sent")
    assert waited < 15
    got = {r["window_start"]: r["maxprice"] for r in rows}
    assert len(got) == len(rows) and got == expected
    stats = pipeline.get(f"/tasks/{task}")["stats"]
    assert stats["counters"]["filtered"] == PARTITIONS and stats["late"] == 0

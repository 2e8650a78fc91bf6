"""A running task rewound by 10 minutes of event time under live traffic (`POST /tasks/{id}/
rewind`), a reducer SIGKILLed during the recomputation.

One tumbling 60 s task over a stream of 15 minutes of event time, produced at 20x its event
time (each record's Kafka timestamp is its event time, as a live source's would be), under two
mappers and two reducers. Once 13 minutes of it are in, the task is rewound to 10 minutes
before, and a reducer owning its units is killed at once. Then:
- every window from `T'` (the first window the rewind recomputes) is emitted at `revision` =
  the rewind's generation exactly once per group, equal to the DuckDB oracle, the windows
  still open at the rewind (the live side) among them;
- every window before `T'` is emitted exactly once, without a revision, and exact;
- the windows from `T'` emitted before the rewind are there once each without a revision
  (the rewind re-emitted them: a compacted topic keeps the latest).
Also: 422 naming an unparsable time, 404 for an unknown task.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from devtools.gen import GeneratorConfig, generate
from devtools.local import ClusterState
from mars.clients.kafka_config import IDEMPOTENT_PRODUCER
from tests.integration.pipeline import OracleInBackground, TopicReader, check_exact, wait_for
from tests.integration.watched import (
    WatchedPipeline,
    close_every_window,
    kill_an_owner,
    make_topic,
    wait_taken_over,
    windowed_sql,
)
from tests.oracle import ExpectedResults

pytestmark = pytest.mark.integration

PARTITIONS = 2
SEED = 41
SPAN_S = 900  # 15 minutes of event time
EVENTS_PER_S = 30  # per second of event time
SPEED = 20  # event seconds per wall second (the last 2 minutes, after the rewind: 6 s)
REWIND_AT_S = 780  # rewind once this much event time is produced...
REWIND_BY_S = 600  # ...to this much before it
WINDOW_MS = 60_000
GROUPS = ("type",)
AGGREGATES = {"n": "count(*)", "total": "sum(bytes)"}
OPTIONS = {"buckets": 4, "idle_timeout": "10 m"}


class _EventTimeProducer(threading.Thread):
    """Produces the stream round robin over the partitions, each record when the wall clock
    reaches its event time at SPEED, with its event time as its Kafka timestamp."""

    def __init__(self, bootstrap: str, topic: str, values: list[bytes]) -> None:
        super().__init__(name="event-time-producer", daemon=True)
        self._brokers, self._topic, self._values = bootstrap, topic, values
        self.event_s = 0  # the event time produced so far
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            producer = Producer({"bootstrap.servers": self._brokers, **IDEMPOTENT_PRODUCER})
            first = json.loads(self._values[0])["timestamp"]
            started = time.monotonic()
            for i, value in enumerate(self._values):
                event_s = json.loads(value)["timestamp"]
                delay = started + (event_s - first) / SPEED - time.monotonic()
                if delay > 0:
                    producer.flush(5)
                    time.sleep(delay)
                producer.produce(
                    self._topic, value, partition=i % PARTITIONS, timestamp=event_s * 1000
                )
                producer.poll(0)
                self.event_s = event_s
            assert producer.flush(30) == 0, "records left unsent"
        except BaseException as error:  # surfaced by the test
            self.error = error


def _post(pipeline: WatchedPipeline, task: str, body: dict[str, Any]) -> httpx.Response:
    return pipeline.call("POST", f"/tasks/{task}/rewind", body=body, timeout=60)


def _iso(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")


@pytest.mark.pipeline(
    mappers=2,
    reducers=2,
    env={"MARS_REDUCER__CHECKPOINT_INTERVAL_MS": "1000", "MARS_MAPPER__BATCH_SIZE": "500"},
)
@pytest.mark.timeout(480)
def test_a_task_rewound_under_live_traffic_re_emits_each_window_from_t_once_exact(
    pipeline: WatchedPipeline,
    cluster: ClusterState,
    kafka_admin: AdminClient,
    unique_name: str,
) -> None:
    topic = make_topic(kafka_admin, f"{unique_name}_src", partitions=PARTITIONS)
    task = f"{unique_name}rewind"
    body = pipeline.register(
        windowed_sql(topic, GROUPS, AGGREGATES, "1 m"), task_id=task, options=OPTIONS
    )
    output = body["topics"]["output"]
    start_s = int(time.time()) - SPAN_S  # the stream ends about now in event time
    config = GeneratorConfig(count=SPAN_S * EVENTS_PER_S, start_s=start_s, span_s=SPAN_S, seed=SEED)
    oracle = OracleInBackground(
        config, group_by=list(GROUPS), window_ms=WINDOW_MS, aggregates=AGGREGATES
    )
    producer = _EventTimeProducer(cluster.kafka_bootstrap, topic, generate(config).values)
    producer.start()
    try:
        bad = _post(pipeline, task, {"from": "last tuesday"})
        assert bad.status_code == 422 and "last tuesday" in bad.text, bad.text
        unknown = _post(pipeline, f"{task}x", {"from": _iso(start_s)})
        assert unknown.status_code == 404, unknown.text

        wait_for(
            lambda: producer.event_s >= start_s + REWIND_AT_S or not producer.is_alive(),
            timeout_s=REWIND_AT_S / SPEED * 3,
            what="13 minutes of event time produced",
            logs=pipeline.logs,
        )
        assert producer.is_alive(), f"the stream ended before the rewind: {producer.error}"
        from_s = producer.event_s - REWIND_BY_S
        answer = _post(pipeline, task, {"from": _iso(from_s)})
        assert answer.status_code == 202, answer.text
        rewind = answer.json()
        victim = kill_an_owner(pipeline, task)  # SIGKILL, during the recomputation
        generation: int = rewind["generation"]
        first_ms: int = rewind["from_window_ms"]
        assert generation == 1 and first_ms == from_s * 1000 - from_s * 1000 % WINDOW_MS
        assert any(end > start for start, end in rewind["reread"].values()), rewind
        wait_taken_over(pipeline, task, victim)
        producer.join(timeout=SPAN_S / SPEED * 3)
        assert not producer.is_alive() and producer.error is None, producer.error
        close_every_window(
            cluster.kafka_bootstrap, topic, after_s=start_s + SPAN_S, partitions=PARTITIONS
        )
        exact = oracle.result(timeout_s=180)[0]
    finally:
        oracle.close()
    spec = pipeline.get(f"/tasks/{task}")["spec"]
    assert [r["generation"] for r in spec["rewinds"]] == [1], spec["rewinds"]

    def part(before: bool) -> ExpectedResults:
        return ExpectedResults(
            results={k: v for k, v in exact.items() if (k[0] < first_ms) == before},
            valid=exact.valid,
            skipped=exact.skipped,
        )

    older, rewound = part(True), part(False)
    assert len({k[0] for k in older}) >= 2 and len({k[0] for k in rewound}) >= 8

    reader = TopicReader(cluster.kafka_bootstrap, [output])
    try:

        def revised() -> int:
            return sum(1 for row in reader.values(output) if row.get("revision") == generation)

        wait_for(
            lambda: revised() >= len(rewound),
            timeout_s=180,
            what="every window from T' at the rewind's revision",
            logs=pipeline.logs,
            every=lambda: reader.poll_for(0.5),
        )
        reader.poll_for(3.0)  # anything beyond the expected rows shows now
        rows = reader.values(output)
    finally:
        reader.close()

    assert {row.get("revision", 0) for row in rows} == {0, generation}
    at_revision = [row for row in rows if row.get("revision") == generation]
    assert all(row["window_start"] >= first_ms for row in at_revision)
    check_exact(at_revision, rewound, GROUPS, tuple(AGGREGATES))  # once each, exact
    first_emission = [row for row in rows if "revision" not in row]
    check_exact(
        [row for row in first_emission if row["window_start"] < first_ms],
        older,
        GROUPS,
        tuple(AGGREGATES),
    )
    again = Counter(
        (row["window_start"], row["type"])
        for row in first_emission
        if row["window_start"] >= first_ms
    )
    assert again, "no window from T' had been emitted before the rewind"
    assert max(again.values()) == 1, "a window from T' was emitted twice before the rewind"

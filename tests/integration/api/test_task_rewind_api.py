"""`POST /tasks/{id}/rewind` and `mars task rewind` over HTTP: accepted with its generation,
no token, a paused task, a kind that cannot be rewound, records Kafka no longer holds, a rewind
by offsets and what it refuses (the live-traffic test is tests/integration/test_task_rewind.py)."""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from tests.integration.api.conftest import RunningApi
from tests.integration.api.test_cli import mars

SQL = "SELECT sip, count(*) AS n FROM {src} GROUP BY sip WINDOWING 60 s"
SESSIONS = "SELECT sip, count(*) AS n FROM {src} GROUP BY sip WINDOWING SESSION 30 s"
FROM = "2026-11-26T08:00:30Z"
FROM_WINDOW_MS = 1_795_680_000_000  # 2026-11-26T08:00:00Z


def _register(http: httpx.Client, api: RunningApi, sql: str, task_id: str) -> None:
    created = http.post("/tasks", json={"sql": sql, "id": task_id}, headers=api.auth())
    assert created.status_code == 201, created.text


def test_rewind_over_http(
    http: httpx.Client, running_api: RunningApi, source_topic: str, unique_name: str
) -> None:
    task_id = f"rewind-{unique_name}"
    _register(http, running_api, SQL.format(src=source_topic), task_id)
    path = f"/tasks/{task_id}/rewind"

    assert http.post(path, json={"from": FROM}).status_code == 401
    first = http.post(path, json={"from": FROM}, headers=running_api.auth())
    assert first.status_code == 202, first.text
    answer = first.json()
    assert answer["generation"] == 1 and answer["from_window_ms"] == FROM_WINDOW_MS
    assert answer["reread"] == {"0": [0, 0], "1": [0, 0]}  # nothing applied yet
    done = mars(running_api, "task", "rewind", task_id, FROM, "--api", running_api.base_url)
    assert done.returncode == 0, done.stderr
    assert "rewind 2" in done.stdout and str(FROM_WINDOW_MS) in done.stdout
    spec = http.get(f"/tasks/{task_id}").json()["spec"]
    assert [(r["generation"], r["from_window_ms"]) for r in spec["rewinds"]] == [
        (1, FROM_WINDOW_MS),
        (2, FROM_WINDOW_MS),
    ]

    assert http.post(f"/tasks/{task_id}/pause", headers=running_api.auth()).status_code == 200
    paused = http.post(path, json={"from": FROM}, headers=running_api.auth())
    assert paused.status_code == 409 and "not running" in paused.text, paused.text

    sessions = f"rewind-s-{unique_name}"
    _register(http, running_api, SESSIONS.format(src=source_topic), sessions)
    refused = http.post(
        f"/tasks/{sessions}/rewind", json={"from": FROM}, headers=running_api.auth()
    )
    assert refused.status_code == 409 and "tumbling and hopping" in refused.text, refused.text


def test_a_rewind_kafka_cannot_serve_is_refused(
    http: httpx.Client,
    running_api: RunningApi,
    kafka_admin: AdminClient,
    make_topic: Callable[[str], str],
    unique_name: str,
) -> None:
    topic = make_topic(f"src_gone_{unique_name}")
    bootstrap = running_api.env["MARS_KAFKA__BOOTSTRAP_SERVERS"]
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(10):
        producer.produce(topic, b"{}", partition=0, timestamp=FROM_WINDOW_MS + i * 1000)
    assert producer.flush(30) == 0
    deleted = kafka_admin.delete_records([TopicPartition(topic, 0, 5)])
    for future in deleted.values():
        future.result(timeout=30)
    task_id = f"rewind-gone-{unique_name}"
    _register(http, running_api, SQL.format(src=topic), task_id)

    refused = http.post(f"/tasks/{task_id}/rewind", json={"from": FROM}, headers=running_api.auth())
    assert refused.status_code == 409, refused.text
    assert "partition 0 from offset 5" in refused.json()["error"]["message"]
    assert http.get(f"/tasks/{task_id}").json()["spec"]["rewinds"] == []


def test_a_rewind_by_offsets_starts_at_the_event_time_found_there(
    http: httpx.Client,
    running_api: RunningApi,
    make_topic: Callable[[str], str],
    unique_name: str,
) -> None:
    """`{"offsets": {p: o}}`: `from` is the earliest event time of the first record with one
    at or after each offset (a bad record is passed over), and the re-read starts at those
    offsets at the latest; what cannot be read is refused and names the partition."""
    topic = make_topic(f"src_offsets_{unique_name}")
    bootstrap = running_api.env["MARS_KAFKA__BOOTSTRAP_SERVERS"]
    producer = Producer({"bootstrap.servers": bootstrap})
    base_s = FROM_WINDOW_MS // 1000 + 600  # ten minutes after FROM_WINDOW_MS
    for i in range(10):  # partition 0: event times base + 10 s x offset
        value = json.dumps({"sip": "a", "timestamp": base_s + 10 * i}).encode()
        producer.produce(topic, value, partition=0, timestamp=(base_s + 10 * i) * 1000)
    producer.produce(topic, b"not json", partition=1, timestamp=(base_s + 200) * 1000)
    later = json.dumps({"sip": "b", "timestamp": base_s + 205}).encode()
    producer.produce(topic, later, partition=1, timestamp=(base_s + 205) * 1000)
    assert producer.flush(30) == 0
    task_id = f"rewind-offsets-{unique_name}"
    _register(http, running_api, SQL.format(src=topic), task_id)
    path = f"/tasks/{task_id}/rewind"

    def rewind(body: dict[str, object]) -> httpx.Response:
        return http.post(path, json=body, headers=running_api.auth())

    accepted = rewind({"offsets": {"0": 7, "1": 0}})
    assert accepted.status_code == 202, accepted.text
    answer = accepted.json()
    assert answer["from_ms"] == (base_s + 70) * 1000  # offset 7's time, before partition 1's
    assert answer["from_window_ms"] == (base_s + 60) * 1000  # its 60 s window
    assert answer["reread"]["0"][0] <= 7 and answer["reread"]["1"][0] == 0

    by_cli = mars(
        running_api, "task", "rewind", task_id, "--offsets", "1=0", "--api", running_api.base_url
    )
    assert by_cli.returncode == 0, by_cli.stderr
    assert f"rewind 2 recomputes the windows from {(base_s + 180) * 1000}" in by_cli.stdout

    beyond = rewind({"offsets": {"0": 10}})
    assert beyond.status_code == 409 and "partition 0 holds offsets 0 to 9" in beyond.text
    unknown = rewind({"offsets": {"5": 0}})
    assert unknown.status_code == 422 and "no partition [5]" in unknown.text, unknown.text
    both = rewind({"from": FROM, "offsets": {"0": 0}})
    assert both.status_code == 422 and "not both" in both.text, both.text
    assert rewind({"offsets": {"0": -1}}).status_code == 422
    spec = http.get(f"/tasks/{task_id}").json()["spec"]
    assert [r["generation"] for r in spec["rewinds"]] == [1, 2]

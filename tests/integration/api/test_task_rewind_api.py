"""`POST /tasks/{id}/rewind` and `mars task rewind` over HTTP: accepted with its generation,
no token, a paused task, a kind that cannot be rewound, records Kafka no longer holds (the
live-traffic test is tests/integration/test_task_rewind.py)."""

from __future__ import annotations

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

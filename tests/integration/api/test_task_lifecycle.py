"""Register, list, show, pause, resume and delete a task over HTTP; check the ZooKeeper,
Kafka and Redis side effects."""

from __future__ import annotations

import json
import time

import httpx
import redis
from confluent_kafka.admin import AdminClient
from kazoo.client import KazooClient

from mars.config import Settings
from mars.store.seq_store import SeqStore
from mars.tasks.topics import partition_count
from tests.integration.api.conftest import RunningApi
from tests.integration.task_topics import topic_config


def _sql(topic: str) -> str:
    return f"SELECT sip, count(*) AS n FROM {topic} GROUP BY sip WINDOWING 60 s"


def _znode(zk: KazooClient, api: RunningApi, task_id: str) -> dict[str, object] | None:
    path = f"{api.zk_root}/tasks/{task_id}"
    if zk.exists(path) is None:
        return None
    data, _ = zk.get(path)
    doc: dict[str, object] = json.loads(data)
    return doc


def test_round_trip_with_side_effects(
    http: httpx.Client,
    running_api: RunningApi,
    source_topic: str,
    unique_name: str,
    zk_client: KazooClient,
    kafka_admin: AdminClient,
    redis_client: redis.Redis,
    settings: Settings,
) -> None:
    task_id = f"task-{unique_name}"
    created = http.post(
        "/tasks",
        json={"sql": _sql(source_topic), "id": task_id, "options": {"buckets": 4}},
        headers=running_api.auth(),
    )
    assert created.status_code == 201, created.text
    task = created.json()
    assert task["id"] == task_id
    assert task["status"] == "RUNNING"
    assert task["spec"]["source_topic"] == source_topic
    assert task["spec"]["options"]["buckets"] == 4
    topics = task["topics"]
    assert topics == {
        "source": source_topic,
        "output": f"mars.results.{task_id}",
        "late": f"mars.late.{task_id}",
        "dead_letter": f"mars.dlq.{task_id}",
    }

    # ZooKeeper: the spec is registered as RUNNING.
    node = _znode(zk_client, running_api, task_id)
    assert node is not None and node["status"] == "RUNNING"
    assert node["spec"]["sql"] == _sql(source_topic)  # type: ignore[index]

    # Kafka: the output topic is compacted; all three have result_partitions partitions.
    existing = set(kafka_admin.list_topics(timeout=30).topics)
    for name in (topics["output"], topics["late"], topics["dead_letter"]):
        assert name in existing
        assert partition_count(kafka_admin, name) == settings.kafka.result_partitions
    assert topic_config(kafka_admin, topics["output"])["cleanup.policy"] == "compact"
    assert topic_config(kafka_admin, topics["late"])["cleanup.policy"] == "delete"

    listed = http.get("/tasks").json()["tasks"]
    assert task_id in [t["id"] for t in listed]

    shown = http.get(f"/tasks/{task_id}").json()
    assert shown["stats"]["records_in"] == 0 and shown["stats"]["last_emitted_window"] is None

    # Stats and latest results come from Redis (as mappers and reducers write them).
    store = SeqStore(redis_client)
    store.counters.add(task_id, {"records_in": 10, "accepted": 7, "bad": 2, "late": 1})
    rows = [{"window_start": 60_000, "window_end": 120_000, "sip": "10.0.0.1", "n": 7}]
    store.results.push(task_id, rows, keep=10)
    stats = http.get(f"/tasks/{task_id}").json()["stats"]
    assert (stats["records_in"], stats["accepted"], stats["bad"], stats["late"]) == (10, 7, 2, 1)
    assert stats["last_emitted_window"] == {"window_start": 60_000, "window_end": 120_000}
    assert http.get(f"/tasks/{task_id}/results").json() == {"task": task_id, "results": rows}

    paused = http.post(f"/tasks/{task_id}/pause", headers=running_api.auth())
    assert paused.status_code == 200 and paused.json()["status"] == "PAUSED"
    assert _znode(zk_client, running_api, task_id)["status"] == "PAUSED"  # type: ignore[index]
    resumed = http.post(f"/tasks/{task_id}/resume", headers=running_api.auth())
    assert resumed.status_code == 200 and resumed.json()["status"] == "RUNNING"
    assert _znode(zk_client, running_api, task_id)["status"] == "RUNNING"  # type: ignore[index]

    deleted = http.delete(f"/tasks/{task_id}", headers=running_api.auth())
    assert deleted.status_code == 204, deleted.text
    assert _znode(zk_client, running_api, task_id) is None
    assert http.get(f"/tasks/{task_id}").status_code == 404
    assert task_id not in [t["id"] for t in http.get("/tasks").json()["tasks"]]
    assert store.counters.read(task_id) == {} and store.results.latest(task_id, 10) == []
    # Topics are kept by default: results stay readable after the task is gone.
    assert topics["output"] in kafka_admin.list_topics(timeout=30).topics


def test_delete_with_topics_removes_them(
    http: httpx.Client,
    running_api: RunningApi,
    source_topic: str,
    unique_name: str,
    kafka_admin: AdminClient,
) -> None:
    task_id = f"drop-{unique_name}"
    created = http.post(
        "/tasks", json={"sql": _sql(source_topic), "id": task_id}, headers=running_api.auth()
    )
    assert created.status_code == 201, created.text
    response = http.delete(
        f"/tasks/{task_id}", params={"delete_topics": "true"}, headers=running_api.auth()
    )
    assert response.status_code == 204
    deadline = time.monotonic() + 30
    names = {f"mars.results.{task_id}", f"mars.late.{task_id}", f"mars.dlq.{task_id}"}
    while names & set(kafka_admin.list_topics(timeout=30).topics):
        assert time.monotonic() < deadline, "topics still listed 30 s after delete"
        time.sleep(0.5)
    assert source_topic in kafka_admin.list_topics(timeout=30).topics


def test_generated_id_is_a_slug_of_the_source_topic(
    http: httpx.Client, running_api: RunningApi, source_topic: str
) -> None:
    first = http.post("/tasks", json={"sql": _sql(source_topic)}, headers=running_api.auth())
    second = http.post("/tasks", json={"sql": _sql(source_topic)}, headers=running_api.auth())
    assert first.status_code == 201 and second.status_code == 201, (first.text, second.text)
    ids = [first.json()["id"], second.json()["id"]]
    assert all(i.startswith(f"{source_topic}-") for i in ids)
    assert ids[0] != ids[1]
    assert http.get(f"/tasks/{ids[0]}").json()["topics"]["output"] == f"mars.results.{ids[0]}"


def test_custom_output_topic_from_options(
    http: httpx.Client,
    running_api: RunningApi,
    source_topic: str,
    unique_name: str,
    kafka_admin: AdminClient,
) -> None:
    output = f"out-{unique_name}"
    response = http.post(
        "/tasks",
        json={"sql": _sql(source_topic), "id": unique_name, "options": {"output_topic": output}},
        headers=running_api.auth(),
    )
    assert response.status_code == 201, response.text
    assert response.json()["topics"]["output"] == output
    assert topic_config(kafka_admin, output)["cleanup.policy"] == "compact"


def test_output_topic_of_another_task_is_409(
    http: httpx.Client, running_api: RunningApi, source_topic: str, unique_name: str
) -> None:
    first = {"sql": _sql(source_topic), "id": f"{unique_name}-a"}
    assert http.post("/tasks", json=first, headers=running_api.auth()).status_code == 201
    clash = {
        "sql": _sql(source_topic),
        "id": f"{unique_name}-b",
        "options": {"output_topic": f"mars.results.{unique_name}-a"},
    }
    answer = http.post("/tasks", json=clash, headers=running_api.auth())
    assert answer.status_code == 409
    assert f"is used by task '{unique_name}-a'" in answer.json()["error"]["message"]


def test_duplicate_id_is_409(
    http: httpx.Client, running_api: RunningApi, source_topic: str, unique_name: str
) -> None:
    body = {"sql": _sql(source_topic), "id": unique_name}
    assert http.post("/tasks", json=body, headers=running_api.auth()).status_code == 201
    again = http.post("/tasks", json=body, headers=running_api.auth())
    assert again.status_code == 409
    assert unique_name in again.json()["error"]["message"]


def test_a_task_registered_paused_waits_for_resume(
    http: httpx.Client, running_api: RunningApi, source_topic: str, unique_name: str
) -> None:
    body = {"sql": _sql(source_topic), "id": unique_name, "status": "PAUSED"}
    created = http.post("/tasks", json=body, headers=running_api.auth())
    assert created.status_code == 201 and created.json()["status"] == "PAUSED"
    assert http.get(f"/tasks/{unique_name}").json()["status"] == "PAUSED"
    resumed = http.post(f"/tasks/{unique_name}/resume", headers=running_api.auth())
    assert resumed.json()["status"] == "RUNNING"
    bad = {"sql": _sql(source_topic), "id": f"{unique_name}x", "status": "DELETED"}
    refused = http.post("/tasks", json=bad, headers=running_api.auth())
    assert refused.status_code == 422 and "status" in refused.json()["error"]["message"]


def test_a_bucket_change_is_recorded_once_and_refused_where_it_cannot_hold(
    http: httpx.Client, running_api: RunningApi, source_topic: str, unique_name: str
) -> None:
    auth = running_api.auth()
    body = {"sql": _sql(source_topic), "id": unique_name, "options": {"buckets": 2}}
    assert http.post("/tasks", json=body, headers=auth).status_code == 201
    changed = http.patch(f"/tasks/{unique_name}", json={"buckets": 5}, headers=auth)
    assert changed.status_code == 200, changed.text
    options = changed.json()["spec"]["options"]
    assert options["buckets"] == 2 and [c["buckets"] for c in options["bucket_changes"]] == [5]
    same = http.patch(f"/tasks/{unique_name}", json={"buckets": 5}, headers=auth)
    assert same.json()["spec"]["options"]["bucket_changes"] == options["bucket_changes"]

    refusals = {
        "nothing to change": {},
        "less than or equal to 1024": {"buckets": 1025},
    }
    for message, change in refusals.items():
        answer = http.patch(f"/tasks/{unique_name}", json=change, headers=auth)
        assert answer.status_code == 422 and message in answer.text, answer.text
    session = {
        "sql": f"SELECT sip, count(*) FROM {source_topic} GROUP BY sip WINDOWING SESSION 30 s",
        "id": f"{unique_name}s",
    }
    assert http.post("/tasks", json=session, headers=auth).status_code == 201
    answer = http.patch(f"/tasks/{unique_name}s", json={"buckets": 4}, headers=auth)
    assert answer.status_code == 409 and "session-window task" in answer.text


def test_unknown_task_is_404_everywhere(
    http: httpx.Client, running_api: RunningApi, unique_name: str
) -> None:
    auth = running_api.auth()
    answers = [
        http.get(f"/tasks/{unique_name}"),
        http.get(f"/tasks/{unique_name}/results"),
        http.post(f"/tasks/{unique_name}/pause", headers=auth),
        http.post(f"/tasks/{unique_name}/resume", headers=auth),
        http.delete(f"/tasks/{unique_name}", headers=auth),
        http.get("/tasks/not%7Ba%7Dvalid%20id"),
    ]
    for answer in answers:
        assert answer.status_code == 404, (answer.request.url, answer.text)
        assert "is not registered" in answer.json()["error"]["message"]


def test_cluster_health_and_docs(
    http: httpx.Client, zk_client: KazooClient, running_api: RunningApi, unique_name: str
) -> None:
    assert http.get("/healthz").json() == {"status": "ok"}
    mapper_node = f"{running_api.zk_root}/mappers/mapper-{unique_name}"
    zk_client.create(mapper_node, b'{"host": "h1", "pid": 42}', ephemeral=True, makepath=True)
    cluster = http.get("/cluster")
    assert cluster.status_code == 200
    body = cluster.json()
    assert set(body) == {
        "leader",
        "members",
        "assignment",
        "mappers",
        "redis_used_memory_bytes",
        "advice",
        "measured_ms",
    }
    assert body["mappers"][f"mapper-{unique_name}"] == {"host": "h1", "pid": 42}
    assert body["redis_used_memory_bytes"] > 0
    assert http.get("/docs").status_code == 200
    paths = http.get("/openapi.json").json()["paths"]
    assert {
        "/tasks",
        "/tasks/{task_id}",
        "/cluster",
        "/healthz",
        "/metrics",
        "/metrics/targets",
    } <= set(paths)
    assert http.get("/ui", follow_redirects=True).text.startswith("<!doctype html>")

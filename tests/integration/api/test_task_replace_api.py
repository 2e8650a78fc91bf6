"""`PUT /tasks/{id}` and `mars task replace` over HTTP: compatible, incompatible, restart, bad
SQL, unknown task, no token (the live-traffic test is tests/integration/test_task_replace.py)."""

from __future__ import annotations

from typing import Any

import httpx

from tests.integration.api.conftest import RunningApi
from tests.integration.api.test_cli import mars

OLD = "SELECT sip, count(*) AS n FROM {src} GROUP BY sip WINDOWING 60 s"
ADDED = (
    "SELECT sip, count(*) AS n, sum(bytes) AS total FROM {src} WHERE bytes > 0 "
    "GROUP BY sip WINDOWING 60 s"
)
REGROUPED = "SELECT dip, count(*) AS n FROM {src} GROUP BY dip WINDOWING 60 s"


def _register(http: httpx.Client, api: RunningApi, src: str, task_id: str) -> dict[str, Any]:
    created = http.post(
        "/tasks", json={"sql": OLD.format(src=src), "id": task_id}, headers=api.auth()
    )
    assert created.status_code == 201, created.text
    spec: dict[str, Any] = created.json()["spec"]
    return spec


def test_replace_over_http(
    http: httpx.Client, running_api: RunningApi, source_topic: str, unique_name: str
) -> None:
    task_id = f"replace-{unique_name}"
    before = _register(http, running_api, source_topic, task_id)
    path = f"/tasks/{task_id}"

    assert http.put(path, json={"sql": ADDED.format(src=source_topic)}).status_code == 401
    refused = http.put(
        path, json={"sql": REGROUPED.format(src=source_topic)}, headers=running_api.auth()
    )
    assert refused.status_code == 409, refused.text
    assert "group keys: sip = sip -> dip = dip" in refused.json()["error"]["message"]
    assert http.get(path).json()["spec"] == before

    bad = f"SELECT sip, frobnicate(x) FROM {source_topic} GROUP BY sip WINDOWING 60 s"
    error = http.put(path, json={"sql": bad}, headers=running_api.auth())
    assert error.status_code == 422
    assert error.json()["error"]["position"] == bad.index("frobnicate")

    changed = http.put(
        path, json={"sql": ADDED.format(src=source_topic)}, headers=running_api.auth()
    )
    assert changed.status_code == 200, changed.text
    spec = changed.json()["spec"]
    assert [a["alias"] for a in spec["aggregates"]] == ["n", "total"]
    assert spec["where"] == "bytes > 0"
    revision = spec["revisions"][-1]
    assert revision["added"] == [1]
    assert spec["options"]["bucket_changes"][-1]["from_window_ms"] == revision["from_window_ms"]
    assert http.get(f"{path}/explain").json()["aggregates"][1]["alias"] == "total"

    restarted = http.put(
        path,
        params={"restart": "true"},
        json={"sql": REGROUPED.format(src=source_topic)},
        headers=running_api.auth(),
    )
    assert restarted.status_code == 200, restarted.text
    assert restarted.json()["spec"]["group_keys"][0]["name"] == "dip"
    assert restarted.json()["spec"]["revisions"] == []

    missing = http.put(
        "/tasks/no-such-task",
        json={"sql": OLD.format(src=source_topic)},
        headers=running_api.auth(),
    )
    assert missing.status_code == 404


def test_cli_replace(
    running_api: RunningApi, http: httpx.Client, source_topic: str, unique_name: str
) -> None:
    task_id = f"replace-cli-{unique_name}"
    _register(http, running_api, source_topic, task_id)
    api = ("--api", running_api.base_url)
    refused = mars(
        running_api, "task", "replace", task_id, REGROUPED.format(src=source_topic), *api
    )
    assert refused.returncode == 1
    assert "error (409)" in refused.stderr and "group keys" in refused.stderr
    done = mars(running_api, "task", "replace", task_id, ADDED.format(src=source_topic), *api)
    assert done.returncode == 0, done.stderr
    assert "new query from window start" in done.stdout
    again = mars(
        running_api,
        "task",
        "replace",
        task_id,
        REGROUPED.format(src=source_topic),
        "--restart",
        *api,
    )
    assert again.returncode == 0, again.stderr
    assert "registered again" in again.stdout

"""`GET /tasks/{id}/explain`, `POST /explain`, `GET /explain?sql=` and `mars task explain`
over HTTP against the running API."""

from __future__ import annotations

import json
from typing import Any

import httpx

from tests.integration.api.conftest import RunningApi
from tests.integration.api.test_cli import mars

WITH_SKETCHES = (
    "SELECT sip, count(*) AS n, approx_count_distinct(dip) AS d, "
    "approx_percentile(bytes, 0.99) AS p99, sum(bytes) AS total FROM {src} "
    "WHERE type = 'dns' GROUP BY sip WINDOWING 60 s SLIDE 20 s GRACE 5 s"
)
OPTIONS = {"event_time": "ts", "event_time_format": "epoch_ms", "buckets": 4}


def _by_alias(plan: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {aggregate["alias"]: aggregate for aggregate in plan["aggregates"]}


def _check_plan(plan: dict[str, Any], source: str) -> None:
    assert plan["source_topic"] == source
    fields = {field["name"]: field for field in plan["fields"]}
    assert set(fields) == {"type", "sip", "dip", "bytes", "ts"}
    assert fields["bytes"]["type"].startswith("number")
    assert fields["ts"]["type"] == "number: epoch milliseconds"
    assert fields["type"]["read_by"] == ["filter"]
    assert plan["window"]["kind"] == "hopping"
    assert "s + 65000 ms" in plan["window"]["close_rule"]
    assert plan["buckets"]["count"] == 4
    aggregates = _by_alias(plan)
    assert aggregates["n"]["approximate"] is False
    assert aggregates["total"]["error_bound"] == "exact for integers; floats within rounding"
    assert aggregates["d"]["approximate"] is True
    assert "relative standard error 1.6" in aggregates["d"]["error_bound"]
    assert "1.33%" in aggregates["p99"]["error_bound"]
    assert aggregates["p99"]["state"] == "approx_percentile:0.99"
    assert any('col("bytes")' in expr for expr in aggregates["total"]["partial_exprs"])


def test_explain_a_query_not_registered(http: httpx.Client, source_topic: str) -> None:
    sql = WITH_SKETCHES.format(src=source_topic)
    answer = http.post("/explain", json={"sql": sql, "options": OPTIONS})
    assert answer.status_code == 200, answer.text
    _check_plan(answer.json(), source_topic)
    assert answer.json()["output_topics"]["late"].startswith("mars.late.")
    assert all(task["spec"]["sql"] != sql for task in http.get("/tasks").json()["tasks"])


def test_explain_a_registered_task(
    http: httpx.Client, running_api: RunningApi, source_topic: str, unique_name: str
) -> None:
    task_id = f"explain-{unique_name}"
    sql = WITH_SKETCHES.format(src=source_topic)
    created = http.post(
        "/tasks", json={"sql": sql, "id": task_id, "options": OPTIONS}, headers=running_api.auth()
    )
    assert created.status_code == 201, created.text
    answer = http.get(f"/tasks/{task_id}/explain")
    assert answer.status_code == 200, answer.text
    plan = answer.json()
    _check_plan(plan, source_topic)
    assert plan["task"] == task_id
    assert plan["output_topics"]["results"] == created.json()["topics"]["output"]
    assert http.get("/tasks/no-such-task/explain").status_code == 404


def test_explain_by_url_takes_the_options_of_the_with_clause(
    http: httpx.Client, source_topic: str
) -> None:
    sql = (
        f"SELECT sip, count(*) FROM {source_topic} GROUP BY sip WINDOWING SESSION 30 s "
        "WITH (event_time = 'ts')"
    )
    answer = http.get("/explain", params={"sql": sql})
    assert answer.status_code == 200, answer.text
    plan = answer.json()
    assert plan["window"]["kind"] == "session"
    assert "last + 30001 ms" in plan["window"]["close_rule"]


def test_a_query_that_does_not_parse_is_a_422_with_its_position(
    http: httpx.Client, source_topic: str
) -> None:
    sql = f"SELECT sip, frobnicate(x) FROM {source_topic} GROUP BY sip WINDOWING 60 s"
    for answer in (
        http.post("/explain", json={"sql": sql}),
        http.get("/explain", params={"sql": sql}),
    ):
        assert answer.status_code == 422, answer.text
        error = answer.json()["error"]
        assert "unknown function 'frobnicate'" in error["message"]
        assert error["position"] == sql.index("frobnicate")
        assert (error["line"], error["column"]) == (1, sql.index("frobnicate") + 1)
    missing = http.post("/explain", json={"sql": f"SELECT count(*) FROM {source_topic}"})
    assert missing.status_code == 422
    assert "WINDOWING" in missing.json()["error"]["message"]


def test_cli_explains_a_query_and_points_at_an_error(
    running_api: RunningApi, source_topic: str
) -> None:
    sql = WITH_SKETCHES.format(src=source_topic)
    options = [f"--option={name}={value}" for name, value in OPTIONS.items()]
    done = mars(running_api, "task", "explain", sql, *options, "--api", running_api.base_url)
    assert done.returncode == 0, done.stderr
    _check_plan(json.loads(done.stdout), source_topic)
    bad = f"SELECT sip, frobnicate(x) FROM {source_topic} GROUP BY sip WINDOWING 60 s"
    failed = mars(running_api, "task", "explain", bad, "--api", running_api.base_url)
    assert failed.returncode == 1
    assert "unknown function 'frobnicate'" in failed.stderr
    assert " " * bad.index("frobnicate") + "^" in failed.stderr

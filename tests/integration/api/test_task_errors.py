"""Bad input answers 4xx with a useful message (and the SQL position), never a 5xx."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from devtools.gen import Encoding
from devtools.gen.binary_encoding import reference_schema
from devtools.local import ClusterState
from mars.config import Settings
from mars.tasks.spec import TimeFormat
from tests.integration.api.conftest import RunningApi, api_env, api_process

GOOD = "SELECT sip, count(*) FROM {src} GROUP BY sip WINDOWING 60 s"


def _error(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    error: dict[str, Any] = response.json()["error"]
    assert set(error) == {"message", "position", "line", "column"}
    return error


# (case, SQL with {src}, body options, text the message must contain, token the position is at)
SQL_ERRORS = [
    ("syntax", "SELEC sip FROM {src} WINDOWING 60 s", None, "syntax error", "FROM"),
    (
        "unknown function",
        "SELECT sip, frobnicate(x) FROM {src} GROUP BY sip WINDOWING 60 s",
        None,
        "unknown function 'frobnicate'",
        "frobnicate",
    ),
    (
        "column neither grouped nor aggregated",
        "SELECT sip, type, count(*) FROM {src} GROUP BY sip WINDOWING 60 s",
        None,
        "column 'type' must appear in GROUP BY or be used in an aggregate",
        "type",
    ),
    (
        "non-positive window",
        "SELECT sip, count(*) FROM {src} GROUP BY sip WINDOWING 0 s",
        None,
        "window size must be positive",
        "WINDOWING",
    ),
    (
        "slide larger than window",
        "SELECT sip, count(*) FROM {src} GROUP BY sip WINDOWING 10 s SLIDE 20 s",
        None,
        "SLIDE must not be larger than the window size",
        "SLIDE",
    ),
    (
        "unknown option in WITH",
        "SELECT sip, count(*) FROM {src} GROUP BY sip WINDOWING 10 s WITH (colour = 'red')",
        None,
        "unknown option 'colour'",
        "'red'",  # the parser points at the option's value
    ),
]


@pytest.mark.parametrize(
    ("sql", "options", "expected", "token"),
    [case[1:] for case in SQL_ERRORS],
    ids=[case[0] for case in SQL_ERRORS],
)
def test_sql_errors_are_422_with_position(
    http: httpx.Client,
    running_api: RunningApi,
    source_topic: str,
    sql: str,
    options: dict[str, Any] | None,
    expected: str,
    token: str,
) -> None:
    text = sql.format(src=source_topic)
    body: dict[str, Any] = {"sql": text, **({"options": options} if options else {})}
    error = _error(http.post("/tasks", json=body, headers=running_api.auth()), 422)
    assert expected in error["message"]
    assert error["position"] == text.index(token)
    assert error["line"] == 1 and error["column"] == text.index(token) + 1


def test_missing_window_points_at_the_end(
    http: httpx.Client, running_api: RunningApi, source_topic: str
) -> None:
    text = f"SELECT sip, count(*) FROM {source_topic}\nGROUP BY sip"
    error = _error(http.post("/tasks", json={"sql": text}, headers=running_api.auth()), 422)
    assert "missing WINDOWING" in error["message"]
    assert error["position"] == len(text)
    assert (error["line"], error["column"]) == (2, len("GROUP BY sip") + 1)


def test_unknown_option_in_body_is_422(
    http: httpx.Client, running_api: RunningApi, source_topic: str
) -> None:
    body = {"sql": GOOD.format(src=source_topic), "options": {"colour": "red"}}
    error = _error(http.post("/tasks", json=body, headers=running_api.auth()), 422)
    assert "unknown option 'colour'" in error["message"]
    assert error["position"] is None  # not about a place in the SQL


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"buckets": 0}, "option buckets"),
        ({"buckets": "many"}, "option buckets"),
        ({"idle_timeout": "soon"}, "option idle_timeout"),
        ({"format": "xml"}, "option format"),
        ({"output_topic": "no spaces allowed"}, "option output_topic"),
    ],
)
def test_bad_option_values_are_422(
    http: httpx.Client,
    running_api: RunningApi,
    source_topic: str,
    options: dict[str, Any],
    expected: str,
) -> None:
    body = {"sql": GOOD.format(src=source_topic), "options": options}
    error = _error(http.post("/tasks", json=body, headers=running_api.auth()), 422)
    assert expected in error["message"]


def test_missing_source_topic_is_422_naming_it(
    http: httpx.Client, running_api: RunningApi, unique_name: str
) -> None:
    body = {"sql": GOOD.format(src=f"nowhere_{unique_name}")}
    error = _error(http.post("/tasks", json=body, headers=running_api.auth()), 422)
    assert f"source topic 'nowhere_{unique_name}' does not exist" in error["message"]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({}, "body.sql: Field required"),
        ({"sql": 42}, "body.sql"),
        ({"sql": "SELECT 1", "extra": True}, "body.extra"),
        ({"sql": "x", "options": [1, 2]}, "body.options"),
        ("not json at all", "JSON"),
    ],
)
def test_malformed_bodies_are_422(
    http: httpx.Client, running_api: RunningApi, body: Any, expected: str
) -> None:
    if isinstance(body, str):
        headers = {**running_api.auth(), "Content-Type": "application/json"}
        response = http.post("/tasks", content=body, headers=headers)
    else:
        response = http.post("/tasks", json=body, headers=running_api.auth())
    error = _error(response, 422)
    assert expected.lower() in error["message"].lower()


@pytest.mark.parametrize("task_id", ["has space", "-leading-dash", "a/b", "x" * 201, "a{b}"])
def test_invalid_task_id_is_422(
    http: httpx.Client, running_api: RunningApi, source_topic: str, task_id: str
) -> None:
    body = {"sql": GOOD.format(src=source_topic), "id": task_id}
    error = _error(http.post("/tasks", json=body, headers=running_api.auth()), 422)
    assert "id" in error["message"]


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/tasks"),
        ("POST", "/tasks/some-task/pause"),
        ("POST", "/tasks/some-task/resume"),
        ("DELETE", "/tasks/some-task"),
    ],
)
def test_mutations_need_the_token(
    http: httpx.Client, source_topic: str, method: str, path: str
) -> None:
    body = {"sql": GOOD.format(src=source_topic)} if path == "/tasks" else None
    missing = http.request(method, path, json=body)
    error = _error(missing, 401)
    assert "Authorization: Bearer" in error["message"]
    assert missing.headers["WWW-Authenticate"] == "Bearer"
    basic = http.request(method, path, json=body, headers={"Authorization": "Basic dXNlcjpw"})
    _error(basic, 401)
    wrong = http.request(method, path, json=body, headers={"Authorization": "Bearer not-the-token"})
    assert _error(wrong, 403)["message"] == "invalid token"


def test_reads_need_no_token(http: httpx.Client) -> None:
    assert http.get("/tasks").status_code == 200
    assert http.get("/healthz").status_code == 200


def test_deeply_nested_sql_is_422_not_a_crash(http: httpx.Client, running_api: RunningApi) -> None:
    body = {"sql": "SELECT " + "(" * 5000 + "1" + ")" * 5000 + " FROM S WINDOWING 1 s"}
    error = _error(http.post("/tasks", json=body, headers=running_api.auth()), 422)
    assert error["message"] == "the SQL is nested too deeply"
    assert http.get("/healthz").status_code == 200  # the server survived


def test_unparseable_json_is_400(http: httpx.Client, running_api: RunningApi) -> None:
    headers = {**running_api.auth(), "Content-Type": "application/json"}
    response = http.post("/tasks", content="[" * 100_000, headers=headers)
    assert _error(response, 400)["message"] == "There was an error parsing the body"


def test_a_registry_mode_binary_task_on_a_cluster_without_a_registry_is_422(
    cluster: ClusterState, settings: Settings, source_topic: str, tmp_path: Path
) -> None:
    """Avro / Protobuf without `schema_file` reads Confluent-framed records: refused (naming
    both ways out) by an API whose cluster has no schema registry; with `schema_file` it is
    registered. An API of its own, since the session's may know a registry another test
    started."""
    env = {k: v for k, v in api_env(cluster).items() if k != "MARS_SCHEMA_REGISTRY__URL"}
    schema = tmp_path / "tuple.avsc"
    schema.write_text(reference_schema(Encoding.AVRO, TimeFormat.EPOCH_S))
    auth = {"Authorization": f"Bearer {settings.api.token}"}
    with api_process(env, tmp_path / "api.log") as url, httpx.Client(base_url=url) as http:
        for binary in ("avro", "protobuf"):
            body = {"sql": GOOD.format(src=source_topic) + f" WITH (format = '{binary}')"}
            error = _error(http.post("/tasks", json=body, headers=auth), 422)
            assert f"format = '{binary}' without schema_file" in error["message"]
            assert "MARS_SCHEMA_REGISTRY__URL" in error["message"]
        with_file = f" WITH (format = 'avro', schema_file = '{schema}')"
        body = {"sql": GOOD.format(src=source_topic) + with_file}
        created = http.post("/tasks", json=body, headers=auth)
        assert created.status_code == 201, created.text

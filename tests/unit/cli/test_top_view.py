"""`mars top` renders the API's JSON into one frame without a server (and tolerates nulls)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from rich.console import Console

from cli.top_command import Snapshot, duration, fetch_snapshot, print_once, render_frame
from mars.clients.api_client import ApiCallError

TASK: dict[str, Any] = {
    "id": "flows-by-sip",
    "status": "RUNNING",
    "reason": None,
    "created_ms": 1_700_000_000_000,
    "updated_ms": 1_700_000_000_000,
    "topics": {"source": "S", "output": "o", "late": "l", "dead_letter": "d"},
    "spec": {"sql": "SELECT sip, count(*) FROM S GROUP BY sip WINDOWING 60 s"},
    "stats": {
        "records_in": 1_234_567,
        "accepted": 1_200_000,
        "bad": 17,
        "late": 300,
        "counters": {"records_in": 1_234_567, "late_reducer": 42},
        "last_emitted_window": None,
    },
    "live": {
        "input_rate": 9876.5,
        "history": [],
        "watermark": 1_700_000_000_000,
        "watermark_lag_ms": 2500,
        "backlog_datasets": 321,
        "result_latency_ms": 45_000,
        "units": [],
        "measured_ms": 1_700_000_002_500,
    },
}

CLUSTER: dict[str, Any] = {
    "leader": "reducer-a",
    "members": {
        "reducer-a": {
            "host": "h",
            "pid": 1,
            "started_ms": 0,
            "metrics": "127.0.0.1:9101",
            "units": 3,
            "owned_units": ["t/0", "t/1", "t/2"],
            "merge_rate": 55.0,
        },
        "reducer-b": {
            "host": "h",
            "pid": 2,
            "started_ms": 0,
            "metrics": None,
            "units": 2,
            "owned_units": [],
            "merge_rate": None,
        },
    },
    "assignment": {"generation": 7, "leader": "reducer-a", "units": {}},
    "mappers": {
        "mapper-1": {
            "member_id": "mapper-1",
            "metrics": "127.0.0.1:9201",
            "updated_ms": 0,
            "partitions": [
                {
                    "topic": "S",
                    "partition": 0,
                    "position": 5,
                    "end": 1005,
                    "lag": 1000,
                    "paused": False,
                },
                {"topic": "S", "partition": 1, "position": 0, "end": 77, "lag": 77, "paused": True},
            ],
            "backlog": {"flows-by-sip": 3},
            "host": "h",
            "pid": 3,
        }
    },
    "redis_used_memory_bytes": 3 * 1024 * 1024,
    "measured_ms": 1_700_000_002_500,
}


def rendered(snapshot: Snapshot | None, error: str | None = None) -> str:
    console = Console(record=True, width=160)
    console.print(render_frame(snapshot, source="http://127.0.0.1:8640", error=error))
    return console.export_text()


def test_one_frame_shows_every_figure() -> None:
    text = rendered(Snapshot(tasks=[TASK], cluster=CLUSTER))
    for expected in (
        "flows-by-sip",
        "RUNNING",
        "9,876/s",  # input rate
        "1,234,567",  # records in
        "1,200,000",  # accepted
        "342",  # late at the mappers + at the reducers
        "17",  # bad
        "2.5 s",  # watermark lag
        "321",  # backlog data sets
        "45 s",  # result latency
        "reducer-a ★ leader",
        "reducer-b",
        "127.0.0.1:9101",
        "55",  # merge rate
        "mapper-1",
        "S[0] 1,000",
        "S[1] 77 paused",
        "127.0.0.1:9201",
        "3.0 MiB",
        "generation 7",
    ):
        assert expected in text, expected
    assert "reducer-b ★" not in text


def test_nulls_show_as_dashes() -> None:
    task = copy.deepcopy(TASK)
    task["stats"] = None
    task["live"] = None
    cluster = copy.deepcopy(CLUSTER)
    cluster.update(leader=None, assignment=None, redis_used_memory_bytes=None)
    cluster["mappers"]["mapper-1"]["partitions"][0]["lag"] = None
    cluster["mappers"]["mapper-1"]["metrics"] = None
    text = rendered(Snapshot(tasks=[task], cluster=cluster))
    task_line = next(line for line in text.splitlines() if "flows-by-sip" in line)
    assert task_line.count("–") == 8
    assert "Redis memory –" in text and "leader –" in text and "generation –" in text
    assert "S[0] ?" in text
    assert "★" not in text


def test_an_error_is_shown_above_the_last_frame() -> None:
    text = rendered(Snapshot(tasks=[TASK], cluster=CLUSTER), error="cannot reach the API")
    assert "cannot reach the API (retrying)" in text and "flows-by-sip" in text
    assert "cannot reach the API" in rendered(None, error="cannot reach the API")


class FakeClient:
    def __init__(self, *, reachable: bool = True) -> None:
        self.reachable = reachable

    def list_tasks(self) -> list[dict[str, Any]]:
        if not self.reachable:
            raise ApiCallError(0, "cannot reach the API at http://x: refused")
        return [{"id": "flows-by-sip"}, {"id": "gone", "status": "RUNNING"}]

    def get_task(self, task_id: str) -> dict[str, Any]:
        if task_id == "gone":
            raise ApiCallError(404, "task 'gone' is not registered")
        return TASK

    def cluster(self) -> dict[str, Any]:
        return CLUSTER


def test_a_task_deleted_meanwhile_keeps_its_list_entry() -> None:
    snapshot = fetch_snapshot(FakeClient())
    assert [task["id"] for task in snapshot.tasks] == ["flows-by-sip", "gone"]
    assert "gone" in rendered(snapshot)


def test_once_prints_an_unreachable_api_to_stderr_and_fails(
    capsys: pytest.CaptureFixture[str],
) -> None:
    console = Console(record=True, width=160)
    code = print_once(FakeClient(reachable=False), console, "http://x")
    assert code == 1
    assert "cannot reach the API" in capsys.readouterr().err
    assert console.export_text() == ""


@pytest.mark.parametrize(
    ("ms", "text"),
    [
        (None, "–"),
        (1_500, "1.5 s"),
        (45_000, "45 s"),
        (2_700_000, "45.0 min"),
        (-2_700_000, "ahead by 45.0 min"),
        (-12_000, "ahead by 12 s"),
        (-20, "0.0 s"),  # clock skew of a few ms is no lead
    ],
)
def test_durations_never_read_negative(ms: float | None, text: str) -> None:
    assert duration(ms) == text

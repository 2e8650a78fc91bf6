"""`mars task ...` and `mars results` as subprocesses against the running API and Kafka."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Sequence

import httpx
from confluent_kafka import Producer

from mars.config import Settings
from tests.integration.api.conftest import PROJECT_ROOT, RunningApi


def mars(api: RunningApi, *args: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cli.main", *args],
        env=api.env,
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_task_add_with_bad_sql_exits_non_zero_with_caret(
    running_api: RunningApi, source_topic: str
) -> None:
    sql = f"SELECT sip, frobnicate(x) FROM {source_topic} GROUP BY sip WINDOWING 60 s"
    done = mars(running_api, "task", "add", sql, "--api", running_api.base_url)
    assert done.returncode == 1
    assert "unknown function 'frobnicate'" in done.stderr
    assert "line 1, column 13" in done.stderr
    lines = done.stderr.splitlines()
    sql_line = next(i for i, line in enumerate(lines) if line.strip() == sql)
    caret = lines[sql_line + 1]
    assert caret.index("^") == lines[sql_line].index("frobnicate")


def test_task_add_takes_the_statistics_aggregates_and_nested_fields(
    running_api: RunningApi, source_topic: str, unique_name: str, http: httpx.Client
) -> None:
    sql = (
        "SELECT sip, approx_percentile(bytes, [0.5, 0.99]) AS p, approx_median(bytes), "
        "stddev(bytes), topk(type, 3), first(bytes), last(bytes), count_if(bytes > 100), "
        "sum(bytes) FILTER (WHERE type = 'dns'), max(meta.hop[0]) "
        f"FROM {source_topic} GROUP BY sip WINDOWING CUMULATE 1 h STEP 1 m"
    )
    added = mars(running_api, "task", "add", sql, "--id", unique_name)
    assert added.returncode == 0, added.stderr
    spec = http.get(f"/tasks/{unique_name}").json()["spec"]
    assert [a["func"] for a in spec["aggregates"]] == [
        "approx_percentiles",
        "approx_percentile",
        "stddev_samp",
        "topk",
        "first",
        "last",
        "count",
        "sum",
        "max",
    ]
    assert spec["window"]["cumulate"] is True


def test_task_add_bad_option_syntax_exits_2(running_api: RunningApi, source_topic: str) -> None:
    sql = f"SELECT sip, count(*) FROM {source_topic} GROUP BY sip WINDOWING 60 s"
    done = mars(running_api, "task", "add", sql, "--option", "buckets")
    assert done.returncode == 2
    assert "expected KEY=VALUE" in done.stderr


def test_task_cli_round_trip(
    running_api: RunningApi, source_topic: str, unique_name: str, http: httpx.Client
) -> None:
    sql = f"SELECT sip, count(*) AS n FROM {source_topic} GROUP BY sip WINDOWING 60 s"
    # The URL comes from the settings (MARS_API__PORT) when --api is not given.
    added = mars(running_api, "task", "add", sql, "--id", unique_name, "--option", "buckets=3")
    assert added.returncode == 0, added.stderr
    assert f"registered {unique_name} (RUNNING)" in added.stdout
    assert http.get(f"/tasks/{unique_name}").json()["spec"]["options"]["buckets"] == 3

    listed = mars(running_api, "task", "ls")
    assert listed.returncode == 0 and unique_name in listed.stdout

    shown = mars(running_api, "task", "show", unique_name)
    assert shown.returncode == 0
    assert json.loads(shown.stdout)["spec"]["source_topic"] == source_topic

    assert f"{unique_name}: PAUSED" in mars(running_api, "task", "pause", unique_name).stdout
    assert http.get(f"/tasks/{unique_name}").json()["status"] == "PAUSED"
    assert f"{unique_name}: RUNNING" in mars(running_api, "task", "resume", unique_name).stdout
    rebucketed = mars(running_api, "task", "buckets", unique_name, "5")
    assert rebucketed.returncode == 0 and f"{unique_name}: 5 buckets from" in rebucketed.stdout
    options = http.get(f"/tasks/{unique_name}").json()["spec"]["options"]
    assert (options["buckets"], options["bucket_changes"][-1]["buckets"]) == (3, 5)

    paused = mars(running_api, "task", "add", sql, "--id", f"{unique_name}p", "--paused")
    assert f"registered {unique_name}p (PAUSED)" in paused.stdout, paused.stderr

    duplicate = mars(running_api, "task", "add", sql, "--id", unique_name)
    assert duplicate.returncode == 1 and "error (409)" in duplicate.stderr

    removed = mars(running_api, "task", "rm", unique_name)
    assert removed.returncode == 0, removed.stderr
    assert http.get(f"/tasks/{unique_name}").status_code == 404
    missing = mars(running_api, "task", "show", unique_name)
    assert missing.returncode == 1 and "is not registered" in missing.stderr


def test_task_cli_reports_an_unreachable_api(running_api: RunningApi) -> None:
    done = mars(running_api, "task", "ls", "--api", "http://127.0.0.1:9")
    assert done.returncode == 1 and "cannot reach the API" in done.stderr


def _register(http: httpx.Client, api: RunningApi, source_topic: str, task_id: str) -> str:
    sql = f"SELECT sip, count(*) AS n FROM {source_topic} GROUP BY sip WINDOWING 60 s"
    created = http.post("/tasks", json={"sql": sql, "id": task_id}, headers=api.auth())
    assert created.status_code == 201, created.text
    output: str = created.json()["topics"]["output"]
    return output


def _produce_in_transaction(
    settings: Settings, topic: str, rows: Sequence[dict[str, object]], *, commit: bool
) -> None:
    producer = Producer(
        {
            "bootstrap.servers": settings.kafka.bootstrap_servers,
            "transactional.id": f"test-{topic}-{time.monotonic_ns()}",
        }
    )
    producer.init_transactions(30)
    producer.begin_transaction()
    for row in rows:
        key = f"{row['window_start']}|{row['sip']}".encode()
        producer.produce(topic, key=key, value=json.dumps(row).encode())
    producer.flush(30)
    if commit:
        producer.commit_transaction(30)
    else:
        producer.abort_transaction(30)


def test_results_prints_only_committed_rows(
    running_api: RunningApi,
    http: httpx.Client,
    source_topic: str,
    unique_name: str,
    settings: Settings,
) -> None:
    output = _register(http, running_api, source_topic, unique_name)
    committed = [
        {"window_start": 120_000, "window_end": 180_000, "sip": "10.0.0.2", "n": 5},
        {"window_start": 60_000, "window_end": 120_000, "sip": "10.0.0.1", "n": 3},
    ]
    _produce_in_transaction(settings, output, committed, commit=True)
    aborted = [{"window_start": 60_000, "window_end": 120_000, "sip": "6.6.6.6", "n": 666}]
    _produce_in_transaction(settings, output, aborted, commit=False)

    done = mars(running_api, "results", unique_name, "--from-beginning")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["window_start", "window_end", "sip", "n"]
    assert [line.split() for line in lines[1:]] == [
        ["60000", "120000", "10.0.0.1", "3"],
        ["120000", "180000", "10.0.0.2", "5"],
    ]
    assert "6.6.6.6" not in done.stdout


def test_results_of_unknown_task_fails(running_api: RunningApi, unique_name: str) -> None:
    done = mars(running_api, "results", unique_name)
    assert done.returncode == 1 and "is not registered" in done.stderr


def test_results_follow_prints_windows_as_they_are_committed(
    running_api: RunningApi,
    http: httpx.Client,
    source_topic: str,
    unique_name: str,
    settings: Settings,
) -> None:
    output = _register(http, running_api, source_topic, unique_name)
    process = subprocess.Popen(
        [sys.executable, "-m", "cli.main", "results", unique_name, "--follow"],
        env=running_api.env,
        cwd=PROJECT_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    assert process.stdout is not None
    stdout = process.stdout

    def pump() -> None:
        for line in stdout:
            lines.put(line)

    threading.Thread(target=pump, daemon=True).start()
    try:
        time.sleep(3)  # let it reach the end of the (empty) topic before producing
        row = {"window_start": 0, "window_end": 60_000, "sip": "10.9.9.9", "n": 42}
        _produce_in_transaction(settings, output, [row], commit=True)
        seen: list[str] = []
        deadline = time.monotonic() + 30
        while not any("10.9.9.9" in line for line in seen):
            assert time.monotonic() < deadline, f"not printed within 30 s: {seen}"
            try:
                seen.append(lines.get(timeout=1))
            except queue.Empty:
                assert process.poll() is None, process.stderr.read() if process.stderr else ""
        assert seen[-1].split() == ["0", "60000", "10.9.9.9", "42"]
    finally:
        process.terminate()
        process.wait(timeout=15)

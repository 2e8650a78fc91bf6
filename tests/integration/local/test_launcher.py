"""`mars local up/down/status` and clear start-up errors, against real processes."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import redis

from devtools.local.kafka_server import start_kafka
from devtools.local.process_handle import ServiceError, port_is_open, start_time_of
from devtools.local.redis_server import start_redis
from mars.config import Settings, load_settings


def _mars(*args: str, run_dir: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MARS_LOCAL__RUN_DIR": str(run_dir)}
    return subprocess.run(
        [sys.executable, "-m", "cli.main", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )


def _port(address: str) -> int:
    return int(address.rsplit(":", 1)[1].split("/")[0])


def test_up_status_down_leaves_no_process_and_no_port(tmp_path: Path) -> None:
    run_dir = tmp_path / "local"
    up = _mars("local", "up", run_dir=run_dir)
    assert up.returncode == 0, up.stderr
    try:
        status = _mars("local", "status", "--json", run_dir=run_dir)
        assert status.returncode == 0, status.stdout + status.stderr
        report = json.loads(status.stdout)
        assert report["up"] is True
        assert {p["role"] for p in report["processes"]} == {"kafka", "zookeeper", "redis"}
        assert all(p["healthy"] and p["pid"] > 0 for p in report["processes"])
    finally:
        down = _mars("local", "down", run_dir=run_dir)
    assert down.returncode == 0, down.stderr
    for process in report["processes"]:
        assert start_time_of(process["pid"]) is None, f"{process['name']} still running"
        assert not port_is_open(_port(process["address"])), f"{process['name']} port open"
    assert _mars("local", "status", run_dir=run_dir).returncode == 1


def test_scale_starts_and_stops_reducers_and_mappers(tmp_path: Path) -> None:
    run_dir = tmp_path / "local"
    up = _mars("local", "up", "--reducers", "1", run_dir=run_dir)
    assert up.returncode == 0, up.stderr

    def running(role: str) -> list[dict[str, object]]:
        status = json.loads(_mars("local", "status", "--json", run_dir=run_dir).stdout)
        return [p for p in status["processes"] if p["role"] == role and p["healthy"]]

    try:
        grown = _mars("local", "scale", "--reducers", "3", "--mappers", "1", run_dir=run_dir)
        assert grown.returncode == 0, grown.stderr
        assert "reducers: 3 (started reducer-2, started reducer-3)" in grown.stdout
        assert len(running("reducer")) == 3 and len(running("mapper")) == 1
        first = running("reducer")[0]
        shrunk = _mars("local", "scale", "--reducers", "1", run_dir=run_dir)
        assert "reducers: 1 (stopped reducer-3, stopped reducer-2)" in shrunk.stdout
        assert [p["name"] for p in running("reducer")] == [first["name"]]
        same = _mars("local", "scale", "--reducers", "1", run_dir=run_dir)
        assert "reducers: 1 (unchanged)" in same.stdout
    finally:
        down = _mars("local", "down", run_dir=run_dir)
    assert down.returncode == 0, down.stderr


def test_a_taken_port_names_the_service(tmp_path: Path) -> None:
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", 0))
        blocker.listen()
        taken = blocker.getsockname()[1]
        with pytest.raises(ServiceError, match=r"^redis .*(?s:.*)Address already in use"):
            start_redis(tmp_path, port=taken, maxmemory_mb=64, timeout_s=20)


def test_missing_jars_name_the_service_and_the_fix(tmp_path: Path) -> None:
    with pytest.raises(ServiceError, match=r"kafka: no jars in .*make setup"):
        start_kafka(tmp_path, jars_dir=tmp_path / "nothing", heap_mb=256, timeout_s=5)


def test_bad_setting_stops_with_its_name(tmp_path: Path) -> None:
    env = {**os.environ, "MARS_MAPPER__BATCH_SIZE": "-3"}
    result = subprocess.run(
        [sys.executable, "-m", "cli.main", "local", "status"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2
    assert "MARS_MAPPER__BATCH_SIZE" in result.stderr


def test_settings_defaults_come_from_configs_file() -> None:
    settings = load_settings()
    assert settings.mapper.batch_size == 50_000
    assert settings.api.port == 8640


def test_local_redis_refuses_writes_when_full_instead_of_evicting(
    redis_client: redis.Redis, settings: Settings
) -> None:
    config = redis_client.config_get("maxmemory*")
    assert config["maxmemory-policy"] == "noeviction"
    assert int(config["maxmemory"]) == settings.local.redis_maxmemory_mb * 1024 * 1024

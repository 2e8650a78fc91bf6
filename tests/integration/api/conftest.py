"""Fixtures of the REST API tests: one `mars api` process (a real subprocess, over HTTP) against
the session's real Kafka, ZooKeeper and Redis."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from devtools.local import ClusterState
from devtools.local.http_client import local_http
from devtools.local.process_handle import free_port
from mars.config import Settings

PROJECT_ROOT = Path(__file__).resolve().parents[3]
STARTUP_TIMEOUT_S = 60.0


@dataclass(frozen=True, slots=True, kw_only=True)
class RunningApi:
    base_url: str
    token: str
    env: dict[str, str]  # the environment the server runs with (CLI tests reuse it)
    zk_root: str  # its own ZooKeeper root, so no other suite's processes see its tasks
    log: Path

    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


def _wait_healthy(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"mars api exited with {process.returncode}:\n{log.read_text()[-3000:]}")
        try:
            if local_http().get(f"{url}/healthz", timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    pytest.fail(f"mars api not healthy within {STARTUP_TIMEOUT_S} s:\n{log.read_text()[-3000:]}")


@contextlib.contextmanager
def api_process(env: dict[str, str], log: Path) -> Iterator[str]:
    """A `mars api` process with `env` (its port: `MARS_API__PORT`), healthy; its URL."""
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "cli.main", "api"],
            env=env,
            cwd=PROJECT_ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{env['MARS_API__PORT']}"
    try:
        _wait_healthy(url, process, log)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def api_env(cluster: ClusterState) -> dict[str, str]:
    """The environment of an API process of its own: a free port, its own ZooKeeper root."""
    return {
        **os.environ,
        **cluster.env(),
        "MARS_API__PORT": str(free_port()),
        "MARS_ZOOKEEPER__ROOT": f"/mars-api-{uuid.uuid4().hex[:8]}",
    }


@pytest.fixture(scope="session")
def running_api(
    cluster: ClusterState, settings: Settings, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningApi]:
    env = api_env(cluster)
    log = tmp_path_factory.mktemp("mars-api") / "api.log"
    with api_process(env, log) as url:
        yield RunningApi(
            base_url=url,
            token=settings.api.token,
            env=env,
            zk_root=env["MARS_ZOOKEEPER__ROOT"],
            log=log,
        )


@pytest.fixture
def http(running_api: RunningApi) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=running_api.base_url, timeout=30.0) as client:
        yield client


@pytest.fixture
def make_topic(kafka_admin: AdminClient) -> Callable[[str], str]:
    """Create a source topic (2 partitions) and return its name."""

    def create(name: str) -> str:
        futures = kafka_admin.create_topics([NewTopic(name, num_partitions=2)])
        futures[name].result(timeout=30)
        deadline = time.monotonic() + 30
        while name not in kafka_admin.list_topics(timeout=30).topics:
            assert time.monotonic() < deadline, f"topic {name} not listed 30 s after creation"
            time.sleep(0.1)
        return name

    return create


@pytest.fixture
def source_topic(unique_name: str, make_topic: Callable[[str], str]) -> str:
    return make_topic(f"src_{unique_name}")

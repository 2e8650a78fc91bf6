"""Fixtures of the store tests: a fresh task id, a `SeqStore`, and a key dumper.

`redis_client` below is a stand-in until tests/conftest.py provides it: a throwaway real
`redis-server` on a free port for the session (no persistence).
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator

import pytest
import redis

from mars.store import SeqStore, TaskKeys

TaskDump = Callable[[str], dict[bytes, bytes]]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def _store_redis_url() -> Iterator[str]:
    binary = shutil.which("redis-server")
    assert binary, "redis-server is not installed"
    port = _free_port()
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--save", "", "--appendonly", "no", "--daemonize", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    deadline = time.monotonic() + 10
    while True:
        try:
            redis.Redis.from_url(url).ping()
            break
        except redis.ConnectionError:
            assert time.monotonic() < deadline, "redis-server did not start"
            time.sleep(0.05)
    yield url
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture
def redis_client(_store_redis_url: str) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(_store_redis_url)
    yield client
    client.close()


@pytest.fixture
def store(redis_client: redis.Redis) -> SeqStore:
    return SeqStore(redis_client)


@pytest.fixture
def task(store: SeqStore) -> Iterator[str]:
    """A task id no other test uses; its keys are removed afterwards."""
    task_id = f"test-{uuid.uuid4().hex[:12]}"
    yield task_id
    store.delete_task(task_id)


@pytest.fixture
def dump_task(redis_client: redis.Redis) -> TaskDump:
    """Every key of a task with its serialized value (DUMP), to prove nothing changed."""

    def dump(task_id: str) -> dict[bytes, bytes]:
        dumps: dict[bytes, bytes] = {}
        for key in redis_client.scan_iter(match=TaskKeys(task_id).scan_pattern, count=1000):
            name = key if isinstance(key, bytes) else key.encode()
            value = redis_client.dump(name)
            assert isinstance(value, bytes)
            dumps[name] = value
        return dumps

    return dump

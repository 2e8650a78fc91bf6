"""Fixtures of the store tests: a `SeqStore` on the session's real Redis (`redis_client` from
tests/conftest.py), a fresh task id, and a key dumper."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

import pytest
import redis

from mars.store import SeqStore, TaskKeys

TaskDump = Callable[[str], dict[bytes, bytes]]


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

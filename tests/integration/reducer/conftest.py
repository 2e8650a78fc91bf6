"""Fixtures of the reducer tests: a `SeqStore` on the session's real Redis and a task id."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
import redis

from mars.store import SeqStore


@pytest.fixture
def store(redis_client: redis.Redis) -> SeqStore:
    return SeqStore(redis_client)


@pytest.fixture
def task_id(store: SeqStore) -> Iterator[str]:
    name = f"r{uuid.uuid4().hex[:10]}"
    yield name
    store.delete_task(name)

"""Fixtures of the mapper integration tests (real Kafka, ZooKeeper, Redis; mapper subprocesses)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis

from devtools.local import ClusterState
from mars.store import SeqStore
from tests.integration.mapper.mapper_harness import MapperGroup

MapperGroupFactory = Callable[..., MapperGroup]


@pytest.fixture
def store(redis_client: redis.Redis) -> SeqStore:
    return SeqStore(redis_client)


@pytest.fixture
def mapper_group(
    cluster: ClusterState, tmp_path: Path, unique_name: str
) -> Iterator[MapperGroupFactory]:
    """`mapper_group(**settings_env)` -> a `MapperGroup`; every process is stopped afterwards."""
    groups: list[MapperGroup] = []

    def make(**settings_env: str) -> MapperGroup:
        group = MapperGroup(
            cluster=cluster,
            name=f"{unique_name}g{len(groups)}",
            log_dir=tmp_path,
            settings_env=settings_env,
        )
        groups.append(group)
        return group

    yield make
    for group in groups:
        group.stop_all()

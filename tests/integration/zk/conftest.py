"""Fixtures of the ZooKeeper tests: started kazoo clients on the session's real ZooKeeper.

Every test gets its own root (`/mars-test-<uuid>`) so tests never see each other's nodes.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NotEmptyError

from mars.tasks.spec import (
    AggFunc,
    AggregateCall,
    EventTime,
    GroupKey,
    OutputColumn,
    TaskOptions,
    TaskSpec,
    TimeFormat,
    WindowSpec,
)

ClientFactory = Callable[..., KazooClient]
SpecFactory = Callable[..., TaskSpec]


@pytest.fixture
def zk_hosts(cluster: Any) -> str:
    return str(cluster.zk_hosts)


@pytest.fixture
def zk_root() -> str:
    return f"/mars-test-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def new_zk_client(zk_hosts: str) -> Iterator[ClientFactory]:
    """Start a fresh KazooClient (its own session); all are closed after the test."""
    clients: list[KazooClient] = []

    def start(**kwargs: Any) -> KazooClient:
        kwargs.setdefault("timeout", 4.0)  # session timeout: expiry tests stay quick
        client = KazooClient(hosts=zk_hosts, **kwargs)
        client.start(timeout=15)
        clients.append(client)
        return client

    yield start
    for client in clients:
        try:
            client.stop()
        finally:
            client.close()


@pytest.fixture
def zk_client(new_zk_client: ClientFactory, zk_root: str) -> Iterator[KazooClient]:
    client = new_zk_client()
    yield client
    for _ in range(20):  # ephemeral nodes of still-closing sessions may race the delete
        try:
            client.delete(zk_root, recursive=True)
            return
        except NotEmptyError:
            time.sleep(0.1)


@pytest.fixture
def make_spec() -> SpecFactory:
    """A valid TaskSpec (`SELECT k, count(*) ... GROUP BY k WINDOWING 60 s`)."""

    def make(task_id: str, *, buckets: int = 4) -> TaskSpec:
        return TaskSpec(
            id=task_id,
            sql=f"SELECT k, count(*) AS n FROM src_{task_id} GROUP BY k WINDOWING 60 s",
            source_topic=f"src_{task_id}",
            event_time=EventTime(field="ts", format=TimeFormat.EPOCH_MS),
            window=WindowSpec(size_ms=60_000, slide_ms=60_000),
            group_keys=(GroupKey(name="k", expression="k"),),
            aggregates=(AggregateCall(func=AggFunc.COUNT, argument=None, alias="n"),),
            outputs=(
                OutputColumn(name="k", expression="k"),
                OutputColumn(name="n", expression="n"),
            ),
            options=TaskOptions(buckets=buckets),
        )

    return make


Eventually = Callable[..., None]


@pytest.fixture
def eventually() -> Eventually:
    """`eventually(predicate, timeout=s, what=...)`: poll until true, else fail the test."""

    def wait(predicate: Callable[[], bool], *, timeout: float = 10.0, what: str = "") -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                pytest.fail(f"not true within {timeout} s: {what or predicate}")
            time.sleep(0.05)

    return wait

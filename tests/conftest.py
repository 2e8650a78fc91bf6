"""Session fixtures: ONE real local cluster (Kafka KRaft, ZooKeeper, Redis) for the integration
tests of a pytest process (each xdist worker has its own), started through the same launcher as
`mars local up`, on fresh ports and folders."""

from __future__ import annotations

import os
import uuid
import warnings
from collections.abc import Iterator

import pytest
import redis
from confluent_kafka.admin import AdminClient
from hypothesis import settings as hypothesis_settings
from kazoo.client import KazooClient

from devtools.local import ClusterState, LocalCluster
from devtools.local.process_handle import FREE_PORTS, FREE_PORTS_ENV
from mars.config import Settings, load_settings
from reducer.progress_reader import close_readers

# Property tests check outcomes, not speed: on a loaded 2-core machine Hypothesis's per-example
# deadline (200 ms) only adds failures that say nothing about the code.
hypothesis_settings.register_profile("mars", deadline=None)
hypothesis_settings.load_profile("mars")


def _worker_ports(worker: str, workers: int) -> str:
    """Worker `gw<i>`'s slice of FREE_PORTS, as FREE_PORTS_ENV takes it ("low-high")."""
    low, high = FREE_PORTS
    width = (high - low + 1) // workers
    first = low + int(worker.removeprefix("gw")) * width
    return f"{first}-{first + width - 1}"


# `make test` runs integration tests on two pytest-xdist workers, each with a cluster of its own:
# each worker (and every process its tests start) picks ports from its own slice of FREE_PORTS.
if worker := os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ[FREE_PORTS_ENV] = _worker_ports(worker, int(os.environ["PYTEST_XDIST_WORKER_COUNT"]))

# tests/compose builds container images and runs the compose cluster: `make test-compose` runs
# it (MARS_COMPOSE_TESTS=1), plain `pytest` (`make test`) leaves it out.
collect_ignore = [] if os.environ.get("MARS_COMPOSE_TESTS") else ["compose"]


@pytest.fixture(scope="session")
def local_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    run_dir = tmp_path_factory.mktemp("mars-cluster")
    cluster = LocalCluster(settings=load_settings(), run_dir=run_dir)
    cluster.up()
    try:
        yield cluster
    finally:
        close_readers()  # the tests' pooled progress readers, before their broker goes
        cluster.down()


@pytest.fixture(autouse=True)
def shared_servers_running(request: pytest.FixtureRequest) -> None:
    """Before a test on the shared cluster, start again any server a test before it left dead
    (a failed restart in a fault test), so that one failure is reported once and not as
    "connection refused" in every test after it. A revival is reported as a warning."""
    if "local_cluster" not in request.fixturenames:
        return
    local_cluster: LocalCluster = request.getfixturevalue("local_cluster")
    if revived := local_cluster.revive():
        warnings.warn(
            f"started again before {request.node.nodeid}: {', '.join(revived)} "
            "(left dead by an earlier test or crashed)",
            stacklevel=1,
        )


@pytest.fixture(scope="session")
def cluster(local_cluster: LocalCluster) -> ClusterState:
    assert local_cluster.state is not None
    return local_cluster.state


@pytest.fixture(scope="session")
def settings(cluster: ClusterState) -> Settings:
    return load_settings(**cluster.settings_overrides())


@pytest.fixture
def redis_client(cluster: ClusterState) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(cluster.redis_url)
    yield client
    client.close()


@pytest.fixture
def zk_client(cluster: ClusterState) -> Iterator[KazooClient]:
    client = KazooClient(hosts=cluster.zk_hosts, timeout=10)
    client.start(timeout=15)
    yield client
    client.stop()
    client.close()


@pytest.fixture
def zk_root(zk_client: KazooClient, unique_name: str) -> Iterator[str]:
    """A fresh ZooKeeper root for one test's Mars processes (`MARS_ZOOKEEPER__ROOT`)."""
    root = f"/{unique_name}"
    zk_client.ensure_path(root)
    yield root
    zk_client.delete(root, recursive=True)


@pytest.fixture(scope="session")
def kafka_admin(cluster: ClusterState) -> Iterator[AdminClient]:
    admin = AdminClient({"bootstrap.servers": cluster.kafka_bootstrap})
    yield admin
    del admin  # destroyed before the broker stops, so it does not log reconnect attempts


@pytest.fixture
def unique_name() -> str:
    """A fresh name for topics, tasks and znodes so tests never see each other's data."""
    return "t" + uuid.uuid4().hex[:10]

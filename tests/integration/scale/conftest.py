"""A local cluster of a test module's own, for the tests that change its shape (three brokers,
a Redis Cluster): `@pytest.mark.own_cluster(kafka_brokers=3)` on the module names the
`LocalCluster` options."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from devtools.local import LocalCluster
from mars.config import load_settings


@pytest.fixture(scope="module")
def own_cluster(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    marker = request.node.get_closest_marker("own_cluster")
    options = marker.kwargs if marker else {}
    cluster = LocalCluster(
        settings=load_settings(),
        run_dir=tmp_path_factory.mktemp(request.module.__name__.rsplit(".", 1)[-1]),
        **options,
    )
    started = time.monotonic()
    cluster.up()
    print(f"\ncluster {options} up in {time.monotonic() - started:.1f} s")
    try:
        yield cluster
    finally:
        assert cluster.state is not None
        for process in cluster.state.processes:  # throwaway data: no controlled shutdown
            if process.role == "kafka":
                process.handle().kill()
        cluster.down()

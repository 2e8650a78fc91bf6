"""Fixtures for integration tests that drive whole Mars processes, and the Spark session
(local[2]: two executor cores, like CI) and standalone cluster (two workers, 1 core and 1 GiB
each) that the Spark tests and the differential test's backfill cases share."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from devtools.local import LocalCluster
from mars.config import Settings
from spark.session import build_spark_session
from tests.integration.watched import WatchedPipeline


@pytest.fixture
def pipeline(
    request: pytest.FixtureRequest,
    local_cluster: LocalCluster,
    settings: Settings,
    unique_name: str,
) -> Iterator[WatchedPipeline]:
    """An API with the mappers, reducers and environment the test's
    `@pytest.mark.pipeline(mappers=..., reducers=..., env={...})` names; stopped afterwards."""
    marker = request.node.get_closest_marker("pipeline")
    options = marker.kwargs if marker else {}
    with WatchedPipeline.running(
        local_cluster,
        name=unique_name,
        token=settings.api.token,
        env=options.get("env", {}),
        mappers=options.get("mappers", 0),
        reducers=options.get("reducers", 0),
    ) as watched:
        yield watched


@pytest.fixture(scope="session")
def spark(settings: Settings) -> Iterator[Any]:
    session = build_spark_session(
        master="local[2]",
        jars_dir=settings.local.jars_dir,
        conf={"spark.ui.showConsoleProgress": "false"},  # no progress bars in the test log
    )
    yield session
    session.stop()


@pytest.fixture(scope="session")
def spark_master(local_cluster: LocalCluster) -> str:
    """The URL of a standalone master with two workers, started once for the session."""
    return local_cluster.start_spark(workers=2)


@pytest.fixture(scope="session")
def schema_registry_url(local_cluster: LocalCluster) -> str:
    """The base URL of a schema registry's Confluent-compatible API (Apicurio Registry, in
    memory; `.../apis/ccompat/v7`), started once for the session by the first test that asks
    for it; Mars processes started after it get it as `MARS_SCHEMA_REGISTRY__URL`."""
    return local_cluster.start_schema_registry()

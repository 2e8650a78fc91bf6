"""Fixtures for integration tests that drive whole Mars processes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mars.config import Settings
from mars.local import LocalCluster
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

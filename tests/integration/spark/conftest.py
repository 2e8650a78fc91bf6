"""The Spark session shared by the Spark tests (local[2]: two executor cores, like CI), and a
Spark standalone master with two workers (1 core, 1 GiB each) for the tests that need a real
cluster."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from mars.config import Settings
from mars.local import LocalCluster
from mars.spark.session import build_spark_session


@pytest.fixture(scope="session")
def spark(settings: Settings) -> Iterator[Any]:
    session = build_spark_session(master="local[2]", jars_dir=settings.local.jars_dir)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def spark_master(local_cluster: LocalCluster) -> str:
    """The URL of a standalone master with two workers, started once for the session."""
    return local_cluster.start_spark(workers=2)

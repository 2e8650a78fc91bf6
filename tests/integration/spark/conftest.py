"""The Spark session shared by the Spark tests (local[2]: two executor cores, like CI)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from mars.config import Settings
from mars.spark.session import build_spark_session


@pytest.fixture(scope="session")
def spark(settings: Settings) -> Iterator[Any]:
    session = build_spark_session(master="local[2]", jars_dir=settings.local.jars_dir)
    yield session
    session.stop()

"""The Spark session of a backfill: master, Kafka connector jars, the executors' Python."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

DEFAULT_MASTER = "local[*]"


def kafka_connector_jars(jars_dir: Path) -> list[str]:
    """The Spark Kafka connector jars fetched by `make setup` (`<jars_dir>/spark-kafka/`)."""
    jars = sorted(str(p) for p in (jars_dir / "spark-kafka").glob("*.jar"))
    if not jars:
        raise FileNotFoundError(
            f"no Spark Kafka connector jars in {jars_dir / 'spark-kafka'}; run `make setup`"
        )
    return jars


def build_spark_session(
    *,
    master: str = DEFAULT_MASTER,
    jars_dir: Path,
    app_name: str = "mars-backfill",
    conf: Mapping[str, str] | None = None,
) -> Any:
    """A SparkSession with the Kafka connector on the class path (no download at run time;
    Spark ships `spark.jars` to the executors).

    The executors run this interpreter unless `PYSPARK_PYTHON` or `spark.pyspark.python` says
    otherwise: right for `local[...]` and for the local standalone cluster (`mars local up
    --spark-workers N`, same machine); on a cluster of other machines point either one at a
    Python with mars installed on every node.
    """
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.jars", ",".join(kafka_connector_jars(jars_dir)))
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.python.worker.reuse", "true")
    )
    # The RDD API takes the workers' interpreter from PYSPARK_PYTHON (default `python3`, which
    # lacks this environment's packages).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    return builder.getOrCreate()

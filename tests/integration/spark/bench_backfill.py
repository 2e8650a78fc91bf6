"""Throughput of the Spark backfill alone, on a fresh local cluster (the figure in docs/spark.md).

    .venv/bin/python -m tests.integration.spark.bench_backfill --records 1000000 --master local[2]

Starts Kafka, ZooKeeper and Redis with the local launcher, produces `--records` generated
tuples to a 4-partition topic, backfills them with Spark and prints the job's summary (records/s
measured from the driver's start to the last executor's summary, session start-up excluded).
"""

from __future__ import annotations

import argparse
import tempfile
import time
import uuid
from pathlib import Path

from confluent_kafka.admin import AdminClient

from devtools.gen import GeneratorConfig
from devtools.gen.produce import produce
from devtools.local import LocalCluster
from mars.config import load_settings
from mars.sql import parse_task
from spark.backfill_job import BackfillJob, run_backfill
from spark.session import build_spark_session
from spark.sources import KafkaSource
from tests.integration.spark.helpers import create_topic

SQL = (
    "SELECT sip, type, count(*) AS cnt, sum(bytes) AS total FROM {topic} "
    "GROUP BY sip, type WINDOWING 60 s GRACE 10 s WITH (buckets=8)"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--chunk-size", type=int, default=50_000)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="mars-bench-") as run_dir:
        cluster = LocalCluster(settings=load_settings(), run_dir=Path(run_dir))
        state = cluster.up()
        try:
            settings = load_settings(**state.settings_overrides())
            topic = "bench" + uuid.uuid4().hex[:8]
            create_topic(
                AdminClient({"bootstrap.servers": state.kafka_bootstrap}),
                topic,
                partitions=args.partitions,
            )
            config = GeneratorConfig(
                count=args.records, seed=1, start_s=1_700_000_000, span_s=4 * 3600, disorder_s=5
            )
            produced = time.monotonic()
            produce(state.kafka(), topic, config)
            print(f"produced {args.records:,} records in {time.monotonic() - produced:.1f} s")
            spark = build_spark_session(master=args.master, jars_dir=settings.local.jars_dir)
            try:
                spec = parse_task(SQL.format(topic=topic), task_id="bench" + uuid.uuid4().hex[:8])
                job = BackfillJob(spec=spec, source=KafkaSource(), chunk_size=args.chunk_size)
                summary = run_backfill(spark, settings=settings, job=job)
                print(summary.describe())
            finally:
                spark.stop()
        finally:
            cluster.down()


if __name__ == "__main__":
    main()

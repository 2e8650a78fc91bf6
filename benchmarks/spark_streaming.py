"""The reference query in PySpark Structured Streaming, the comparison of experiment 3.

    python -m benchmarks.spark_streaming --bootstrap H:P --topic S --output OUT --checkpoint DIR \
        [--format csv|json]

Kafka source (earliest) -> CSV split (or `from_json` with a schema of the three fields the query
reads, for JSON records) -> `withWatermark(ts, 0 s)` -> `groupBy(window(ts, 60 s),
sip, type).count()` -> JSON -> Kafka sink, append mode, `local[2]`, default trigger (the next
micro-batch as soon as the previous one ends). Prints `SESSION <t>` once the session is up and
`STARTED <t>` when the query starts (wall seconds); runs until it is terminated.
"""

from __future__ import annotations

import argparse
import sys
import time

from mars.clients import spark_kafka_options
from mars.config import KafkaSettings, load_settings
from spark.session import build_spark_session


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--window", default="60 seconds")
    parser.add_argument("--shuffle-partitions", default="4")
    parser.add_argument("--format", choices=("csv", "json"), default="csv")
    args = parser.parse_args(argv)

    from pyspark.sql import functions as F

    spark = build_spark_session(
        master=args.master,
        jars_dir=load_settings().local.jars_dir,
        app_name="mars-bench-streaming",
        conf={"spark.sql.shuffle.partitions": args.shuffle_partitions},
    )
    spark.sparkContext.setLogLevel("WARN")
    print(f"SESSION {time.time()}", flush=True)
    kafka_options = spark_kafka_options(KafkaSettings(bootstrap_servers=args.bootstrap))
    raw = (
        spark.readStream.format("kafka")
        .options(**kafka_options)
        .option("subscribe", args.topic)
        .option("startingOffsets", "earliest")
        .load()
    )
    if args.format == "json":
        fields = F.from_json(
            F.col("value").cast("string"), "timestamp LONG, sip STRING, type STRING"
        )
        parsed = raw.select(fields.alias("r")).select(
            F.timestamp_seconds(F.col("r.timestamp")).alias("ts"), "r.sip", "r.type"
        )
    else:
        cells = F.split(F.col("value").cast("string"), ",")
        parsed = raw.select(
            F.timestamp_seconds(cells[0].cast("long")).alias("ts"),
            cells[2].alias("sip"),
            cells[1].alias("type"),
        )
    counts = (
        parsed.withWatermark("ts", "0 seconds")
        .groupBy(F.window("ts", args.window), "sip", "type")
        .count()
    )
    out = counts.select(
        F.to_json(
            F.struct(
                F.unix_millis(F.col("window.start")).alias("window_start"),
                "sip",
                "type",
                F.col("count"),
            )
        ).alias("value")
    )
    started = time.time()
    query = (
        out.writeStream.format("kafka")
        .options(**kafka_options)
        .option("topic", args.output)
        .option("checkpointLocation", args.checkpoint)
        .outputMode("append")
        .start()
    )
    print(f"STARTED {started}", flush=True)
    query.awaitTermination()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The ceiling of experiment 3: consume + decode only, one process per core, no aggregation.

    python -m benchmarks.ceiling --bootstrap H:P --topic S --partitions 0,2 --batch 5000 \
        [--consumer confluent|native]

Each worker sets up its heap as a mapper does (`mars.heap`), assigns its partitions from the
beginning with the mapper's consumer settings (`mapper.mapper_process.consumer_config`), consumes
batches of `--batch` records split by partition (confluent-kafka's `consume` and the mapper's
own loop, `group_by_partition`; or the native consumer's `consume_grouped`) and decodes each
partition's values with the reference query's decoder (the mapper's decode path), until it
reaches the partitions' end. Prints one JSON line: records, bytes, CPU seconds and `progress`, the
cumulative record count after each batch with its wall time, from which the harness takes the
steady-state rate exactly as it does for the mappers.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid

from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from benchmarks.workload import paper_sql
from mapper.mapper_process import consumer_config
from mapper.partition_batches import consume_by_partition
from mars.clients.native_consumer import NativeConsumer
from mars.config import load_settings
from mars.engine.compiled_task import CompiledTask
from mars.engine.joined_values import JoinedValues
from mars.heap import keep_freed_heap
from mars.sql import parse_task


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--partitions", required=True, help="comma list")
    parser.add_argument("--batch", type=int, default=5000)
    parser.add_argument("--consumer", choices=("confluent", "native"), default="confluent")
    args = parser.parse_args(argv)
    keep_freed_heap()  # as a mapper process does
    decoder = CompiledTask.build(parse_task(paper_sql(args.topic), task_id="ceiling")).decoder
    settings = load_settings(kafka={"bootstrap_servers": args.bootstrap})
    config = {
        **consumer_config(settings, member_id="bench-ceiling"),
        "group.id": f"bench-ceiling-{uuid.uuid4().hex[:8]}",
    }
    partitions = [int(p) for p in args.partitions.split(",")]
    with_ends = Consumer(config)  # confluent-kafka's, for the end offsets only
    ends = {
        p: with_ends.get_watermark_offsets(TopicPartition(args.topic, p), timeout=30)[1]
        for p in partitions
    }
    with_ends.close()
    consumer = NativeConsumer(config) if args.consumer == "native" else Consumer(config)
    consumer.assign([TopicPartition(args.topic, p, OFFSET_BEGINNING) for p in partitions])
    pending = {p for p, end in ends.items() if end > 0}
    records = size = 0
    progress: list[tuple[float, int]] = []
    cpu_start = time.process_time()
    while pending:
        batches = consume_by_partition(consumer, args.batch, 1.0)
        if not progress and batches:
            progress.append((time.time(), 0))
            cpu_start = time.process_time()
        for batch in batches.get(args.topic, {}).values():
            decoder.decode(batch.values)
            records += len(batch)
            values = batch.values
            size += (
                values.value_bytes() if isinstance(values, JoinedValues) else sum(map(len, values))
            )
            if batch.offsets[-1] + 1 >= ends[batch.partition]:
                pending.discard(batch.partition)
        if batches:
            progress.append((time.time(), records))
    cpu_s = time.process_time() - cpu_start
    consumer.close()
    print(
        json.dumps(
            {
                "records": records,
                "bytes": size,
                "cpu_s": cpu_s,
                "progress": progress,
            }
        ),
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

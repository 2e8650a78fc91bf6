"""The ceiling of experiment 3: consume + decode only, one process per core, no aggregation.

    python -m benchmarks.ceiling --bootstrap H:P --topic S --partitions 0,2 --batch 5000

Each worker assigns its partitions from the beginning, `consume`s batches of `--batch`
records, splits them by partition with the mapper's own loop (`group_by_partition`) and
decodes each partition's values with the paper task's decoder (the mapper's decode path),
until it reaches the partitions' end. Prints one JSON line: records, bytes, CPU seconds and
`progress`, the cumulative record count after each batch with its wall time, from which the
harness takes the steady-state rate exactly as it does for the mappers.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid

from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from benchmarks.workload import paper_sql
from mapper.partition_batches import group_by_partition
from mars.clients import client_config
from mars.config import KafkaSettings
from mars.engine.compiled import CompiledTask
from mars.sql import parse_task


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--partitions", required=True, help="comma list")
    parser.add_argument("--batch", type=int, default=5000)
    args = parser.parse_args(argv)
    decoder = CompiledTask.build(parse_task(paper_sql(args.topic), task_id="ceiling")).decoder
    consumer = Consumer(
        client_config(
            KafkaSettings(bootstrap_servers=args.bootstrap),
            {
                "group.id": f"bench-ceiling-{uuid.uuid4().hex[:8]}",
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
                "enable.partition.eof": False,
            },
        )
    )
    partitions = [int(p) for p in args.partitions.split(",")]
    ends = {
        p: consumer.get_watermark_offsets(TopicPartition(args.topic, p), timeout=30)[1]
        for p in partitions
    }
    consumer.assign([TopicPartition(args.topic, p, OFFSET_BEGINNING) for p in partitions])
    pending = {p for p, end in ends.items() if end > 0}
    records = size = 0
    progress: list[tuple[float, int]] = []
    cpu_start = time.process_time()
    while pending:
        messages = consumer.consume(num_messages=args.batch, timeout=1.0)
        if not progress and messages:
            progress.append((time.time(), 0))
            cpu_start = time.process_time()
        for batch in group_by_partition(messages).get(args.topic, {}).values():
            decoder.decode(batch.values)
            records += len(batch)
            size += sum(map(len, batch.values))
            if batch.offsets[-1] + 1 >= ends[batch.partition]:
                pending.discard(batch.partition)
        if messages:
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

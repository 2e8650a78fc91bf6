"""Throughput of the batch engine on the paper's tuples (~150-byte, 20-field JSON records).

Prints records/s for decode alone and for the whole pre-aggregation of the paper's query
(`SELECT sip, type, timestamp, count(*) ... WINDOWING 60 s`) plus a heavier query with SUM,
AVG and APPROX_COUNT_DISTINCT. Single process, single thread of Python.

    .venv/bin/python benchmarks/engine_throughput.py [--records 200000] [--batch 5000]
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import Callable

from mars.engine.compiled import CompiledTask
from mars.engine.preaggregate import Preaggregator
from mars.engine.records import SourceRecord
from mars.sql import parse_task

QUERIES = {
    "paper": "SELECT sip, type, timestamp, count(*) FROM S GROUP BY sip, type, timestamp "
    "WINDOWING 60 s",
    "heavy": "SELECT sip, count(*) AS n, sum(bytes) AS total, avg(bytes) AS mean, "
    "approx_count_distinct(dip) AS dips FROM S WHERE type <> 'icmp' GROUP BY sip "
    "WINDOWING 60 s",
}


def paper_tuple(rng: random.Random, second: int) -> bytes:
    """A 20-field record like the paper's network tuples."""
    record = {
        "sip": f"10.0.{rng.randint(0, 3)}.{rng.randint(1, 60)}",
        "dip": f"10.1.{rng.randint(0, 9)}.{rng.randint(1, 99)}",
        "sp": rng.randint(1024, 9999),
        "dp": rng.choice([80, 443, 53, 22]),
        "type": rng.choice(["tcp", "udp", "icmp"]),
        "timestamp": second,
        "bytes": rng.randint(40, 1500),
    }
    record.update({chr(ord("a") + i): rng.randint(0, 9) for i in range(13)})
    return json.dumps(record, separators=(",", ":")).encode()


def timed(run: Callable[[], None]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process): CPU time stays honest on a busy machine."""
    wall, cpu = time.perf_counter(), time.process_time()
    run()
    return time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--batch", type=int, default=5_000)
    args = parser.parse_args()
    rng = random.Random(7)
    values = [paper_tuple(rng, 1_700_000_000 + i // 2_000) for i in range(args.records)]
    records = [SourceRecord(partition=0, offset=i, value=v) for i, v in enumerate(values)]
    mean_size = sum(map(len, values)) / len(values)
    print(f"{args.records} records, mean {mean_size:.0f} bytes, batches of {args.batch}")
    for name, sql in QUERIES.items():
        task = CompiledTask.build(parse_task(sql, task_id=name))

        def decode_all(task: CompiledTask = task) -> None:
            for start in range(0, len(values), args.batch):
                task.decoder.decode(values[start : start + args.batch])

        preaggregator = Preaggregator(task)

        def preaggregate_all(preaggregator: Preaggregator = preaggregator) -> None:
            stream_times: dict[int, int | None] = {}
            for start in range(0, len(records), args.batch):
                batch = records[start : start + args.batch]
                stream_times = dict(preaggregator.run(batch, stream_times, now_ms=0).stream_times)

        for step, run in (("decode", decode_all), ("pre-aggregate", preaggregate_all)):
            wall, cpu = timed(run)
            print(
                f"{name:>6} {step:>13}: {args.records / wall:>10,.0f} records/s wall, "
                f"{args.records / cpu:>10,.0f} records per CPU-second"
            )


if __name__ == "__main__":
    main()

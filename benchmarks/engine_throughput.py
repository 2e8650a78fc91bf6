"""Per-core throughput of the batch engine on the reference 20-field tuples (`devtools.gen`).

For each query, in batches of `--batch` records (one partition, offsets in order):

- `decode`: the decode-only ceiling, the task's decoder turning record bytes into its frame;
- `pre-aggregate`: the whole `Preaggregator.run` (decode, event time, lateness, group by,
  buckets, encoded data sets) from the mapper's `SourceRecord`s;
- `columns`: the same from parallel lists (a `SourceBatch`, the mapper's path);
- `py-entries`: `columns` with the data sets' entries built in Python, not by `mars_native`
  (mars.engine.bucketed_datasets: the fallback when the extension is not built).

Figures are records and MB of record bytes per CPU-second of this process
(`time.process_time()`), honest on a shared, loaded machine; the wall-clock rate is printed
too. `--profile` writes a pyinstrument report of the `columns` step of the reference query.

    .venv/bin/python benchmarks/engine_throughput.py [--records 200000] [--batch 5000]
        [--encoding json|csv|avro|protobuf] [--repeat 3] [--profile /tmp/engine.html]

Avro and Protobuf records are bare payloads of the reference schema, read through a schema
file (`devtools.gen.binary_encoding`): the decode the mapper does once a framed record's
writer schema is cached (docs/benchmarks.md, "Reading this run").
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from unittest import mock

import mars.engine.bucketed_datasets as bucketed_datasets
from devtools.gen import FIELD_NAMES, Encoding, GeneratorConfig, generate
from devtools.gen.binary_encoding import BINARY_ENCODINGS, reference_schema
from mars.engine.compiled_task import CompiledTask
from mars.engine.preaggregate import Preaggregator
from mars.engine.records import SourceBatch, SourceRecord
from mars.sql import parse_task
from mars.tasks.spec import TimeFormat

QUERIES = {
    "paper": "SELECT sip, type, timestamp, count(*) FROM S GROUP BY sip, type, timestamp "
    "WINDOWING 60 s",
    "heavy": "SELECT sip, count(*) AS n, sum(bytes) AS total, avg(bytes) AS mean, "
    "approx_count_distinct(dip) AS dips FROM S WHERE type <> 'icmp' GROUP BY sip "
    "WINDOWING 60 s",
    "hopping": "SELECT proto, direction, avg(duration), max(packets), count(*) FROM S "
    "GROUP BY proto, direction WINDOWING 120 s SLIDE 60 s",
}


def with_format(sql: str, encoding: Encoding) -> str:
    if encoding is Encoding.CSV:
        return f"{sql} WITH (format='csv', csv_columns='{','.join(FIELD_NAMES)}')"
    if encoding in BINARY_ENCODINGS:
        suffix = ".avsc" if encoding is Encoding.AVRO else ".proto"
        with tempfile.NamedTemporaryFile("w", suffix=suffix, delete=False) as schema:
            schema.write(reference_schema(encoding, TimeFormat.EPOCH_S))
        return f"{sql} WITH (format='{encoding.value}', schema_file='{schema.name}')"
    return sql


def timed(run: Callable[[], None], *, repeat: int) -> tuple[float, float]:
    """Best (wall seconds, CPU seconds) of `repeat` runs: the least disturbed one."""
    best: tuple[float, float] | None = None
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        run()
        result = (time.perf_counter() - wall, time.process_time() - cpu)
        best = result if best is None or result[1] < best[1] else best
    assert best is not None
    return best


def with_python_entries(run: Callable[[], None]) -> Callable[[], None]:
    """`run` with the data sets' entries built in Python even when `mars_native` is built."""

    def run_with_python_entries() -> None:
        with mock.patch.object(bucketed_datasets, "mars_native", None):
            run()

    return run_with_python_entries


def write_profile(path: str, run: Callable[[], None]) -> None:
    """A pyinstrument report of `run`: HTML to `path`, text to stdout."""
    from pyinstrument import Profiler

    with Profiler(interval=0.001) as profiler:
        run()
    with open(path, "w", encoding="utf-8") as out:
        out.write(profiler.output_html())
    print(profiler.output_text(color=False, show_all=False))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--batch", type=int, default=5_000)
    parser.add_argument("--encoding", choices=[e.value for e in Encoding], default="json")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", help="write a pyinstrument HTML report of paper/columns")
    args = parser.parse_args()
    encoding = Encoding(args.encoding)
    values = generate(GeneratorConfig(count=args.records, seed=7, encoding=encoding)).values
    records = [SourceRecord(partition=0, offset=i, value=v) for i, v in enumerate(values)]
    offsets = list(range(len(values)))
    partitions = [0] * len(values)
    size = sum(map(len, values))
    print(
        f"{args.records} {encoding.value} records, mean {size / len(values):.0f} bytes, "
        f"batches of {args.batch}, best of {args.repeat}"
    )
    batches = range(0, len(values), args.batch)
    for name, sql in QUERIES.items():
        task = CompiledTask.build(parse_task(with_format(sql, encoding), task_id=name))
        preaggregator = Preaggregator(task)

        def decode_all(task: CompiledTask = task) -> None:
            for start in batches:
                task.decoder.decode(values[start : start + args.batch])

        def preaggregate_all(preaggregator: Preaggregator = preaggregator) -> None:
            stream_times: dict[int, int | None] = {}
            for start in batches:
                batch = records[start : start + args.batch]
                stream_times = dict(preaggregator.run(batch, stream_times, now_ms=0).stream_times)

        def columns_all(preaggregator: Preaggregator = preaggregator) -> None:
            stream_times: dict[int, int | None] = {}
            for start in batches:
                end = start + args.batch
                batch = SourceBatch(
                    values=values[start:end],
                    partitions=partitions[start:end],
                    offsets=offsets[start:end],
                )
                stream_times = dict(preaggregator.run(batch, stream_times, now_ms=0).stream_times)

        steps = (
            ("decode", decode_all),
            ("pre-aggregate", preaggregate_all),
            ("columns", columns_all),
            ("py-entries", with_python_entries(columns_all)),
        )
        for step, run in steps:
            wall, cpu = timed(run, repeat=args.repeat)
            print(
                f"{name:>6} {step:>13}: {args.records / cpu:>9,.0f} records/CPU-s "
                f"{size / cpu / 1e6:>6.1f} MB/CPU-s  ({args.records / wall:>9,.0f} records/s wall)"
            )
        if args.profile and name == "paper":
            write_profile(args.profile, columns_all)


if __name__ == "__main__":
    main()

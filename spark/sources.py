"""Where a backfill reads: a Kafka offset range or files, as Spark data of sorted records.

Both give rows `(partition, offset, value)` such that each Spark partition holds one source
partition's records in offset order, which is what the executors need to decide lateness in
partition order exactly like a mapper:

- Kafka: a DataFrame from Spark's Kafka source over explicit per-partition offset ranges
  (`assign`), which makes one Spark partition per Kafka partition range, read in offset order
  (no `minPartitions`, which would split a range). Executors take it as Arrow batches.
- Files: an RDD, one Spark partition per file (a file is a "partition", its line/row number the
  "offset"); JSON lines and CSV lines are handed over as they are (the task's input format
  decodes them), Parquet rows become JSON objects (JSON tasks only). `.gz` lines files work too.
  Executors open the files themselves, so on a cluster the paths must be readable from every
  executor (a shared or mounted file system).
"""

from __future__ import annotations

import glob
import gzip
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any, BinaryIO

from mars.clients import spark_kafka_options
from mars.config import KafkaSettings
from spark.offsets import OffsetRange


class FileFormat(StrEnum):
    LINES = "lines"  # JSON lines or CSV lines: one record per line, bytes as they are
    PARQUET = "parquet"


@dataclass(frozen=True, slots=True, kw_only=True)
class KafkaSource:
    """The task's source topic between two offset specs (see `spark.offsets`)."""

    starting_offsets: str = "earliest"
    ending_offsets: str = "latest"


@dataclass(frozen=True, slots=True, kw_only=True)
class FileSource:
    """Files matching a glob (or several, comma-separated)."""

    path: str

    def files(self) -> list[str]:
        """The matching files, sorted: file i is source partition i."""
        found: set[str] = set()
        for pattern in self.path.split(","):
            matches = glob.glob(pattern.strip(), recursive=True)
            found.update(str(Path(m).resolve()) for m in matches if Path(m).is_file())
        return sorted(found)


def file_format(path: str) -> FileFormat:
    return FileFormat.PARQUET if path.endswith(".parquet") else FileFormat.LINES


# A bulk read wants big fetches: the consumer defaults (1 MB per partition, 500 records per poll)
# made the JVM side of a local backfill the bottleneck.
BULK_FETCH_OPTIONS = {
    "kafka.max.partition.fetch.bytes": str(16 << 20),
    "kafka.fetch.max.bytes": str(64 << 20),
    "kafka.max.poll.records": "20000",
}


def kafka_frame(
    spark: Any, *, kafka: KafkaSettings, topic: str, ranges: Sequence[OffsetRange]
) -> Any | None:
    """A DataFrame of `partition`, `offset`, `value` over the non-empty `ranges` of `topic`
    (None when all are empty). One Spark partition per Kafka partition range, rows in offset
    order: the executors consume it with `mapInArrow` and check the order. The brokers and
    credentials are `kafka`'s, as Spark's `kafka.` options (`spark_kafka_options`)."""
    wanted = [r for r in ranges if r.size]
    if not wanted:
        return None
    frame = (
        spark.read.format("kafka")
        .options(**spark_kafka_options(kafka))
        .option("assign", json.dumps({topic: [r.partition for r in wanted]}))
        .option("startingOffsets", json.dumps({topic: {str(r.partition): r.start for r in wanted}}))
        .option("endingOffsets", json.dumps({topic: {str(r.partition): r.end for r in wanted}}))
        .options(**BULK_FETCH_OPTIONS)
        .load()
    )
    return frame.select("partition", "offset", "value")


def file_rows(spark: Any, files: Sequence[str]) -> Any:
    """An RDD of `(file index, line or row number, value)`, one Spark partition per file."""
    if not files:
        return spark.sparkContext.emptyRDD()
    indexed = list(enumerate(files))
    return spark.sparkContext.parallelize(indexed, len(indexed)).mapPartitions(read_files)


def read_files(indexed: Iterable[tuple[int, str]]) -> Iterator[tuple[int, int, bytes]]:
    """Executor side: the records of each `(index, path)`, in file order."""
    for index, path in indexed:
        if file_format(path) is FileFormat.PARQUET:
            yield from _parquet_records(index, path)
        else:
            yield from _line_records(index, path)


def _open(path: str) -> BinaryIO:
    if path.endswith(".gz"):
        return gzip.open(path, "rb")  # type: ignore[return-value]
    return open(path, "rb")


def _line_records(index: int, path: str) -> Iterator[tuple[int, int, bytes]]:
    with _open(path) as handle:
        for number, line in enumerate(handle):
            value = line.rstrip(b"\r\n")
            if value.strip():  # blank lines are not records
                yield index, number, value


def _parquet_records(index: int, path: str) -> Iterator[tuple[int, int, bytes]]:
    import polars as pl

    frame = pl.read_parquet(path)
    for number, line in enumerate(frame.write_ndjson().splitlines()):
        yield index, number, line.encode()

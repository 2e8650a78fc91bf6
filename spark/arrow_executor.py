"""The executor entry of a Kafka backfill over Arrow (`DataFrame.mapInArrow`).

Spark hands each Python worker its partition's rows as Arrow record batches (columns
`partition`, `offset`, `value`), so the rows never cross the JVM boundary one by one: the
columns become Python lists in C (`to_pylist`) and go to `PartitionBackfillWriter.write_columns`.
The writer's summaries come back as one small Arrow batch per Spark task (`SUMMARY_SCHEMA`).

pyarrow is imported by the functions only (executors and the driver of a Kafka backfill need
it; importing `spark` does not).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator
from typing import Any

from spark.partition_writer import WriterConfig, connected_writer
from spark.record_columns import RecordColumns
from spark.summary import PartitionSummary

_SUMMARY_FIELDS = [f.name for f in dataclasses.fields(PartitionSummary)]
# Spark DDL of the rows `run_arrow_partition` returns: one per source partition, all integers.
SUMMARY_SCHEMA = ", ".join(f"{name} bigint" for name in _SUMMARY_FIELDS)


def run_arrow_partition(config: WriterConfig, batches: Iterable[Any]) -> Iterator[Any]:
    """The function `mapInArrow` runs per Spark partition: Arrow batches of `partition`,
    `offset`, `value` in, Arrow batches of partition summaries out."""
    import pyarrow as pa

    with connected_writer(config) as writer:
        summaries = list(writer.write_columns(_columns(batches)))
    rows = {name: [getattr(s, name) for s in summaries] for name in _SUMMARY_FIELDS}
    yield pa.RecordBatch.from_pydict(
        {name: pa.array(values, type=pa.int64()) for name, values in rows.items()}
    )


def _columns(batches: Iterable[Any]) -> Iterator[RecordColumns]:
    for batch in batches:
        if batch.num_rows:
            yield RecordColumns(
                partitions=batch.column("partition").to_pylist(),
                offsets=batch.column("offset").to_pylist(),
                values=batch.column("value").to_pylist(),
            )


def summaries_from_rows(rows: Iterable[Any]) -> list[PartitionSummary]:
    """The driver side: collected Spark rows back into `PartitionSummary` values."""
    return [PartitionSummary(**row.asDict()) for row in rows]

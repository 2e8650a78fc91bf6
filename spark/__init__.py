"""PySpark bulk pre-aggregation (backfill) through the Redis SEQ protocol (docs/spark.md).

Importing this package does not import pyspark: the reducer reads the watermark holds through
`mars.store` (`SeqStore.snapshot_unit`), and pyspark is loaded only when a session is built.
"""

from mars.store.backfill import BackfillCoordination, HandoverError
from spark.backfill_job import BackfillError, BackfillJob, run_backfill
from spark.sources import FileSource, KafkaSource
from spark.summary import BackfillSummary, PartitionSummary

__all__ = [
    "BackfillCoordination",
    "BackfillError",
    "BackfillJob",
    "BackfillSummary",
    "FileSource",
    "HandoverError",
    "KafkaSource",
    "PartitionSummary",
    "run_backfill",
]

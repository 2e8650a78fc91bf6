"""The pure batch engine shared by the mapper, the Spark job and the reducer."""

from mars.engine.compiled_task import CompiledTask
from mars.engine.dataset import (
    DataSet,
    OpenWindows,
    decode_dataset,
    encode_dataset,
    merge_into,
)
from mars.engine.errors import DataSetFormatError, EngineError
from mars.engine.finalize import finalize_window, iso_utc, select_top_k
from mars.engine.preaggregate import Preaggregator, bucket_of, preaggregate
from mars.engine.records import (
    BatchPartials,
    PartitionBatch,
    RejectedRecord,
    SourceBatch,
    SourceRecord,
)

__all__ = [
    "BatchPartials",
    "CompiledTask",
    "DataSet",
    "DataSetFormatError",
    "EngineError",
    "OpenWindows",
    "PartitionBatch",
    "Preaggregator",
    "RejectedRecord",
    "SourceBatch",
    "SourceRecord",
    "bucket_of",
    "decode_dataset",
    "encode_dataset",
    "finalize_window",
    "iso_utc",
    "merge_into",
    "preaggregate",
    "select_top_k",
]

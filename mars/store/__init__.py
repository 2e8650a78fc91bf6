"""The Redis SEQ protocol: per-task data sets numbered by SEQ counters (docs/protocol.md)."""

from mars.store.errors import (
    BucketLayoutChangedError,
    MissingDataSetError,
    ProtocolViolationError,
    StoreError,
)
from mars.store.keys import WRITTEN_CHANNEL, TaskKeys
from mars.store.seq_store import SeqStore
from mars.store.state import (
    NO_OFFSET,
    ApplyResult,
    ApplyStatus,
    Backlog,
    Heartbeat,
    LayoutEpoch,
    LiveState,
    Snapshot,
    SourceId,
    SourceState,
    UnitSnapshot,
)
from mars.store.watermark import watermark_of

__all__ = [
    "NO_OFFSET",
    "WRITTEN_CHANNEL",
    "ApplyResult",
    "ApplyStatus",
    "Backlog",
    "BucketLayoutChangedError",
    "Heartbeat",
    "LayoutEpoch",
    "LiveState",
    "MissingDataSetError",
    "ProtocolViolationError",
    "SeqStore",
    "Snapshot",
    "SourceId",
    "SourceState",
    "StoreError",
    "TaskKeys",
    "UnitSnapshot",
    "watermark_of",
]

"""Errors of the Redis SEQ protocol."""

from __future__ import annotations


class StoreError(Exception):
    """Base class of store errors."""


class MissingDataSetError(StoreError):
    """A data set between rseq and seq is gone: another owner released it (this reader is a
    zombie and must re-read its snapshot) or Redis lost data. Recoverable by re-reading."""

    def __init__(self, *, task: str, bucket: int, seq: int) -> None:
        super().__init__(f"task {task!r} bucket {bucket}: data set {seq} is missing")
        self.task = task
        self.bucket = bucket
        self.seq = seq


class ProtocolViolationError(StoreError):
    """A caller broke a protocol rule (e.g. released data sets that were never written)."""


class BucketLayoutChangedError(StoreError):
    """The task's bucket count changed for a window of the batch since the writer read the
    task (mars.tasks.bucket_layout): nothing was written; take the new spec and write again."""

    def __init__(self, *, task: str, writer: int, current: int) -> None:
        super().__init__(
            f"task {task!r}: bucket layout generation {current} in Redis, the writer used "
            f"{writer}; re-read the task and pre-aggregate the batch again"
        )
        self.task = task
        self.writer = writer
        self.current = current

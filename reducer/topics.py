"""The topic only reducers use: the compacted progress topic (a task's own topics are
`mars.tasks.topics`), and which of its partitions holds a unit's progress."""

from __future__ import annotations

import zlib

from mars.tasks.topics import TopicPlan
from reducer.progress import PROGRESS_TOPIC

# Compaction keeps the latest progress per unit; small segments let the cleaner run early, so a
# new owner's scan of one partition stays short.
PROGRESS_TOPIC_PLAN = TopicPlan(
    name=PROGRESS_TOPIC,
    partitions=8,
    config={
        "cleanup.policy": "compact",
        "segment.ms": "600000",
        "min.cleanable.dirty.ratio": "0.1",
    },
)


def partition_for(key: str, partitions: int) -> int:
    """The progress partition of a unit key: crc32, the same in every process and language."""
    return zlib.crc32(key.encode()) % partitions

"""Kafka topics the reducer writes: the compacted progress topic and each task's output topics."""

from __future__ import annotations

import zlib
from collections.abc import Mapping

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

PROGRESS_PARTITIONS = 8
# Compaction keeps the latest progress per unit; small segments let the cleaner run early, so a
# new owner's scan of one partition stays short.
PROGRESS_CONFIG = {
    "cleanup.policy": "compact",
    "segment.ms": "600000",
    "min.cleanable.dirty.ratio": "0.1",
}


class TopicError(RuntimeError):
    """A topic could not be created or described."""


def ensure_topics(
    admin: AdminClient,
    topics: Mapping[str, tuple[int, Mapping[str, str]]],
    *,
    replication_factor: int,
    timeout_s: float = 30.0,
) -> None:
    """Create each `name -> (partitions, config)` that does not exist yet (idempotent)."""
    existing = set(admin.list_topics(timeout=timeout_s).topics)
    missing = [
        NewTopic(
            name, num_partitions=parts, replication_factor=replication_factor, config=dict(cfg)
        )
        for name, (parts, cfg) in topics.items()
        if name not in existing
    ]
    if not missing:
        return
    for name, future in admin.create_topics(missing, operation_timeout=timeout_s).items():
        try:
            future.result(timeout=timeout_s)
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise TopicError(f"cannot create topic {name}: {exc}") from exc


def partition_for(key: str, partitions: int) -> int:
    """The progress partition of a unit key: crc32, the same in every process and language."""
    return zlib.crc32(key.encode()) % partitions

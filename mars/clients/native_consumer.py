"""The mapper's source consumer on `mars_native.BatchConsumer` (Rust, librdkafka; `native/`).

`NativeConsumer` speaks the part of confluent-kafka's `Consumer` the mapper uses, with the same
types (`TopicPartition`, `KafkaException`, rebalance callbacks `(consumer, partitions)`), so
the mapper's assignment, seek, pause and commit logic is one code for both consumers. The
difference is the batch: `consume_grouped` returns the records by topic and partition, built
in Rust in one pass, each partition's values one joined buffer (`JoinedValues`), instead of a
`Message` object per record that Python then takes apart
(`mapper.partition_batches.group_by_partition`). See docs/mapper.md, "The consumer".

`mapper.consumer = "native"` (the default) uses it when the extension is installed (`make
setup` builds it); `"confluent"` forces confluent-kafka's consumer.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from mars.engine.joined_values import JoinedValues
from mars.engine.records import PartitionBatch, TopicBatches
from mars.native import mars_native

log = logging.getLogger(__name__)

RebalanceCallback = Callable[[Any, list[TopicPartition]], None]
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class TopicInfo:
    """What the mapper reads of a topic's metadata (as confluent-kafka's `TopicMetadata`)."""

    partitions: range
    error: str | None


@dataclass(frozen=True, slots=True)
class ClusterTopics:
    topics: dict[str, TopicInfo]


class NativeConsumer:
    """A consumer-group member with confluent-kafka's interface and batch-wise consume."""

    def __init__(self, config: Mapping[str, Any]) -> None:
        if mars_native is None:
            raise RuntimeError("mars_native is not installed (make setup builds it)")
        self._native = _call(lambda: mars_native.BatchConsumer(_librdkafka_config(config)))
        self._callbacks: dict[str, RebalanceCallback] = {}

    def consume_grouped(self, max_messages: int, timeout: float) -> TopicBatches:
        """Up to `max_messages` records, waiting at most `timeout` seconds: topic -> partition
        -> records in offset order. Errors are logged (as `group_by_partition` does)."""
        runs, errors = _call(lambda: self._native.consume(max_messages, timeout))
        for error in errors:
            log.warning("consumer error: %s", error)
        grouped: TopicBatches = {}
        for topic, partition, offsets, payloads, ends in runs:  # one run per partition
            values = JoinedValues.from_native(payloads, ends)
            grouped.setdefault(topic, {})[partition] = PartitionBatch(partition, offsets, values)
        return grouped

    def subscribe(
        self,
        topics: list[str],
        *,
        on_assign: RebalanceCallback,
        on_revoke: RebalanceCallback,
        on_lost: RebalanceCallback,
    ) -> None:
        self._callbacks = {"assign": on_assign, "revoke": on_revoke, "lost": on_lost}
        _call(lambda: self._native.subscribe(list(topics), self._on_rebalance))

    def _on_rebalance(self, kind: str, partitions: list[tuple[str, int, int]]) -> None:
        callback = self._callbacks.get(kind)
        if callback is None:  # "error": librdkafka's advice is to start over unassigned
            log.warning("rebalance error; unassigning %s", partitions)
            self.unassign()
            return
        callback(self, [TopicPartition(t, p, o) for t, p, o in partitions])

    def unsubscribe(self) -> None:
        self._native.unsubscribe()

    def assign(self, partitions: list[TopicPartition]) -> None:
        _call(lambda: self._native.assign(_triples(partitions)))

    def unassign(self) -> None:
        _call(self._native.unassign)

    def pause(self, partitions: list[TopicPartition]) -> None:
        _call(lambda: self._native.pause(_triples(partitions)))

    def resume(self, partitions: list[TopicPartition]) -> None:
        _call(lambda: self._native.resume(_triples(partitions)))

    def seek(self, partition: TopicPartition) -> None:
        _call(lambda: self._native.seek(partition.topic, partition.partition, partition.offset))

    def position(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        keys = [(tp.topic, tp.partition) for tp in partitions]
        offsets = _call(lambda: self._native.position(keys))
        return [TopicPartition(t, p, o) for (t, p), o in zip(keys, offsets, strict=True)]

    def commit(self, *, offsets: list[TopicPartition], asynchronous: bool) -> None:
        _call(lambda: self._native.commit(_triples(offsets), asynchronous))

    def list_topics(self, timeout: float = -1) -> ClusterTopics:
        found = _call(lambda: self._native.list_topics(30.0 if timeout < 0 else timeout))
        return ClusterTopics(
            topics={name: TopicInfo(range(count), error) for name, (count, error) in found.items()}
        )

    def close(self) -> None:
        """Leave the group; the revoke callback runs before this returns."""
        _call(self._native.close)


SourceConsumer = Consumer | NativeConsumer  # what the mapper reads its source topics with


def _triples(partitions: list[TopicPartition]) -> list[tuple[str, int, int]]:
    return [(tp.topic, tp.partition, tp.offset) for tp in partitions]


def _librdkafka_config(config: Mapping[str, Any]) -> dict[str, str]:
    """librdkafka takes strings; Python's booleans are its "true"/"false"."""
    return {
        key: ("true" if value else "false") if isinstance(value, bool) else str(value)
        for key, value in config.items()
    }


def _call(action: Callable[[], T]) -> T:
    """Run `action`, raising the native error as confluent-kafka's `KafkaException`, which the
    mapper already retries."""
    assert mars_native is not None
    try:
        return action()
    except mars_native.NativeKafkaError as exc:
        code, message = exc.args
        raise KafkaException(KafkaError(code, message)) from exc

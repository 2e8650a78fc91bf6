"""The partitions this mapper owns and where it reads them: positioned from Redis.

On assignment the start offset of each partition is the smallest `applied_offset + 1` over the
tasks reading its topic (Redis is the truth; Kafka's committed offsets are only a hint), so
every task sees all its unapplied records and skips the ones it already applied. A task that
starts while its topic is already being read makes the loop seek back the same way.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping

from confluent_kafka import OFFSET_STORED, KafkaException, TopicPartition

from mapper.errors import StopRequested, retry_delays
from mapper.source_state_book import SourceStateBook
from mapper.task_router import TaskRouter
from mars.clients import REDIS_ERRORS
from mars.clients.native_consumer import SourceConsumer

log = logging.getLogger(__name__)

PartitionKey = tuple[str, int]


class PartitionAssignment:
    """Owned partitions, their read positions, pauses and pending seeks."""

    def __init__(
        self,
        *,
        consumer: SourceConsumer,
        router: TaskRouter,
        progress: SourceStateBook,
        stop: threading.Event | None = None,
    ) -> None:
        self._stop = stop or threading.Event()
        self._consumer = consumer
        self._router = router
        self._progress = progress
        self.owned: dict[str, set[int]] = {}
        self.next_offset: dict[PartitionKey, int] = {}
        self.paused: set[PartitionKey] = set()
        self._pending_seeks: dict[PartitionKey, int] = {}

    # -- rebalance callbacks (run inside consumer.consume) -------------------------------------

    def on_assign(self, consumer: SourceConsumer, partitions: list[TopicPartition]) -> None:
        by_topic: dict[str, list[int]] = {}
        for tp in partitions:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        for topic, numbers in by_topic.items():
            for task in self._router.tasks_for(topic):
                self._load_views(task.id, numbers)
        for tp in partitions:
            start = self._start_offset(tp.topic, tp.partition)
            tp.offset = OFFSET_STORED if start is None else start
            if start is not None:
                self.next_offset[(tp.topic, tp.partition)] = start
            self.owned.setdefault(tp.topic, set()).add(tp.partition)
        consumer.assign(partitions)
        log.info("assigned %s", _describe(partitions))

    def on_revoke(self, consumer: SourceConsumer, partitions: list[TopicPartition]) -> None:
        self._drop(partitions)
        consumer.unassign()
        log.info("revoked %s", _describe(partitions))

    def on_lost(self, consumer: SourceConsumer, partitions: list[TopicPartition]) -> None:
        self._drop(partitions)
        consumer.unassign()
        log.warning("lost %s", _describe(partitions))

    def _drop(self, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            key = (tp.topic, tp.partition)
            self.owned.get(tp.topic, set()).discard(tp.partition)
            self.next_offset.pop(key, None)
            self.paused.discard(key)
            self._pending_seeks.pop(key, None)
            ids = [task.id for task in self._router.tasks_for(tp.topic)]
            self._progress.forget_partitions(ids, [tp.partition])
        self.owned = {topic: ps for topic, ps in self.owned.items() if ps}

    def _load_views(self, task_id: str, partitions: list[int]) -> None:
        """Load the views from Redis, waiting while Redis is down or loading its AOF: where to
        start reading depends on them (a start past a task's applied offset would skip its
        records), so nothing is read before they are known."""
        for delay in retry_delays():
            try:
                self._progress.load(task_id, partitions)
                return
            except REDIS_ERRORS as exc:
                log.warning("task %s: loading progress failed (%s), retrying", task_id, exc)
                if self._stop.wait(delay):
                    raise StopRequested from exc

    # -- positions -----------------------------------------------------------------------------

    def _start_offset(self, topic: str, partition: int) -> int | None:
        ids = [task.id for task in self._router.tasks_for(topic)]
        return self._progress.start_offset(ids, partition)

    def task_started(self, task_id: str, topic: str) -> None:
        """A task appeared for a topic already read: load its views, seek back if it is behind."""
        partitions = sorted(self.owned.get(topic, ()))
        if not partitions:
            return
        self._load_views(task_id, partitions)
        for partition in partitions:
            start = self._start_offset(topic, partition)
            current = self.next_offset.get((topic, partition))
            if start is not None and (current is None or start < current):
                self.rewind(topic, partition, start)

    def rewind(self, topic: str, partition: int, offset: int) -> None:
        key = (topic, partition)
        if partition not in self.owned.get(topic, ()):
            return
        pending = self._pending_seeks.get(key)
        self._pending_seeks[key] = offset if pending is None else min(pending, offset)
        self.next_offset[key] = self._pending_seeks[key]

    def apply_pending_seeks(self) -> None:
        """Seek where asked; a partition whose fetcher is not started yet is retried later."""
        for key, offset in list(self._pending_seeks.items()):
            try:
                self._consumer.seek(TopicPartition(key[0], key[1], offset))
            except KafkaException as exc:
                log.debug("seek %s to %d postponed: %s", key, offset, exc)
                continue
            log.info("seek %s/%d to %d", key[0], key[1], offset)
            del self._pending_seeks[key]

    def consumed(self, topic: str, partition: int, last_offset: int) -> None:
        key = (topic, partition)
        if key not in self._pending_seeks:
            self.next_offset[key] = last_offset + 1

    def seeking(self, topic: str, partition: int) -> bool:
        return (topic, partition) in self._pending_seeks

    # -- pauses --------------------------------------------------------------------------------

    def set_paused(self, wanted: Iterable[PartitionKey]) -> None:
        """Pause exactly `wanted` among the owned partitions."""
        desired = {key for key in wanted if key[1] in self.owned.get(key[0], ())}
        to_pause = desired - self.paused
        to_resume = self.paused - desired
        if to_pause:
            self._consumer.pause([TopicPartition(t, p) for t, p in sorted(to_pause)])
            log.info("paused %s", sorted(to_pause))
        if to_resume:
            self._consumer.resume([TopicPartition(t, p) for t, p in sorted(to_resume)])
            log.info("resumed %s", sorted(to_resume))
            # Pausing dropped what was fetched ahead; continue exactly after what was read.
            for topic, partition in to_resume:
                offset = self.next_offset.get((topic, partition))
                if offset is not None:
                    self.rewind(topic, partition, offset)
        self.paused = desired

    def owned_view(self) -> Mapping[str, Iterable[int]]:
        return self.owned


def _describe(partitions: list[TopicPartition]) -> str:
    return ", ".join(f"{tp.topic}/{tp.partition}@{tp.offset}" for tp in partitions) or "nothing"

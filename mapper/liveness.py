"""Idle-partition heartbeats: tell reducers which of this mapper's partitions are caught up.

Every `interval_ms`, for every task (all in one `SeqStore.heartbeats`), each owned partition of
the task's topic, whether it is caught up and since when (`mapper.caught_up`: confirmed by a fresh
broker answer, not paused, without a break), plus the topic's partition count. Reducers leave
idle partitions out of the watermark, so the last windows close when the input stops
(docs/protocol.md, "Watermark").
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

from mapper.task_router import ActiveTask
from mars.clients import REDIS_ERRORS
from mars.clients.end_offsets import PartitionKey
from mars.store import Heartbeat, SeqStore

log = logging.getLogger(__name__)


class LivenessReporter:
    """Sends the heartbeats when due (a Redis failure is logged: the next one retries)."""

    def __init__(self, *, store: SeqStore, interval_ms: int) -> None:
        self._store = store
        self._interval_ms = interval_ms
        self._last_ms: int | None = None

    def due(self, now_ms: int) -> bool:
        return self._last_ms is None or now_ms - self._last_ms >= self._interval_ms

    def report(
        self,
        *,
        now_ms: int,
        tasks: Iterable[ActiveTask],
        partition_counts: Mapping[str, int],
        owned: Mapping[str, Iterable[int]],
        caught_up_since: Mapping[PartitionKey, int | None],
    ) -> None:
        self._last_ms = now_ms
        beats = {}
        for task in tasks:
            count = partition_counts.get(task.topic)
            if count is None:
                continue  # topic not there yet
            since = {p: caught_up_since.get((task.topic, p)) for p in owned.get(task.topic, ())}
            beats[task.id] = Heartbeat(
                partition_count=count,
                partitions={p: s is not None for p, s in since.items()},
                caught_up_since={p: s for p, s in since.items() if s is not None},
            )
        if not beats:
            return
        try:
            self._store.heartbeats(beats, now_ms=now_ms)
        except REDIS_ERRORS as exc:
            log.warning("heartbeats of %d task(s) failed: %s", len(beats), exc)

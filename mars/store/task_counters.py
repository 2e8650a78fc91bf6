"""A task's counters in Redis (`mars:{T}:stats`): records in, accepted, bad, late, batches...

`apply_batch` moves the mappers' counters in its own script, with the data (exact); this class
adds the rest (paused time, the reducers' late records go through `lua/publish_unit.lua`) and
reads them all for the API and the tests.
"""

from __future__ import annotations

from collections.abc import Mapping

from mars.clients.redis_connection import RedisClient
from mars.store.keys import TaskKeys
from mars.store.state import text_of


class TaskCounters:
    """Reads and adds to the counters of tasks."""

    def __init__(self, client: RedisClient) -> None:
        self._redis = client

    def add(self, task: str, counters: Mapping[str, int]) -> None:
        """Add each delta (zeros skipped) in one MULTI."""
        nonzero = {name: delta for name, delta in counters.items() if delta}
        if not nonzero:
            return
        key = TaskKeys(task).stats
        with self._redis.pipeline(transaction=True) as pipe:
            for name, delta in nonzero.items():
                pipe.hincrby(key, name, delta)
            pipe.execute()

    def read(self, task: str) -> dict[str, int]:
        """Every counter of the task ({} before anything happened)."""
        raw = self._redis.hgetall(TaskKeys(task).stats)
        return {text_of(k): int(v) for k, v in raw.items()}

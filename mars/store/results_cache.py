"""The newest result rows of each task, kept in Redis for `GET /tasks/{id}/results`.

A convenience copy (`mars:{T}:results`, a capped list, newest first): the reducers push each
committed window's rows after their Kafka transaction; the task's result topic stays the
source of truth.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from mars.clients.redis_connection import RedisClient
from mars.store.keys import TaskKeys


class ResultsCache:
    """Pushes and reads the capped list of a task's latest result rows."""

    def __init__(self, client: RedisClient) -> None:
        self._redis = client

    def push(self, task: str, rows: Sequence[Mapping[str, Any]], *, keep: int) -> None:
        """Prepend `rows` (as JSON) to the task's list, keeping the newest `keep`."""
        encoded = [json.dumps(row, separators=(",", ":"), default=str).encode() for row in rows]
        self.push_encoded(task, encoded, keep=keep)

    def push_encoded(self, task: str, rows: Sequence[bytes], *, keep: int) -> None:
        """`push` for rows already encoded as JSON objects (the reducer's result values)."""
        if keep < 1:
            raise ValueError("keep must be positive")
        if not rows:
            return
        key = TaskKeys(task).results
        with self._redis.pipeline(transaction=True) as pipe:
            pipe.lpush(key, *rows[-keep:])  # the rest would be trimmed at once
            pipe.ltrim(key, 0, keep - 1)
            pipe.execute()

    def latest(self, task: str, limit: int) -> list[dict[str, Any]]:
        """Up to `limit` most recent result rows, newest first."""
        if limit < 1:
            return []
        raw = self._redis.lrange(TaskKeys(task).results, 0, limit - 1)
        return [json.loads(item) for item in raw]

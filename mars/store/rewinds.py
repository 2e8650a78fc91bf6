"""Rewinds of a task in Redis: begin one (the fence, the hand-over point, the per-bucket
markers and the watermark hold, one Lua script), read them, end one (docs/rewind.md).

`mars:{T}:rewinds` holds `last` (the last generation) and per generation its record
(`TaskRewind.to_redis`). The hold is a field `rewind:<g>` of `mars:{T}:backfill:holds`, so
reducers hold the watermark for it exactly as for a backfill job
(`watermark_held_by_backfills`): a hold gone when an owner reads the holds with its snapshots
(`SeqStore.snapshot_unit`, one atomic step) means every data set of the re-read is numbered at
or below the snapshot's seq.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from mars.clients.redis_connection import RedisClient
from mars.store.keys import TaskKeys
from mars.store.scripts import lua_source
from mars.store.state import text_of
from mars.tasks.rewind import REWIND_HOLD_PREFIX, TaskRewind


class RewindStore:
    """The Redis side of rewinds."""

    def __init__(self, client: RedisClient) -> None:
        self._redis = client
        self._begin = client.register_script(lua_source("begin_rewind"))

    def begin(
        self,
        task: str,
        *,
        from_window_ms: int,
        from_ms: int,
        starts: Sequence[int],
        buckets: int,
        now_ms: int,
    ) -> TaskRewind:
        """Start the task's next rewind: `starts[p]` is where partition p's re-read begins
        (clamped to its hand-over offset); `buckets` how many buckets get a marker."""
        keys = TaskKeys(task)
        reply = self._begin(
            keys=[keys.sources, keys.rewinds, keys.backfill_holds]
            + [keys.seq(b) for b in range(buckets)],
            args=[str(now_ms), str(from_window_ms), str(from_ms), *map(str, starts)],
        )
        return TaskRewind.from_redis(text_of(reply))

    def rewinds(self, task: str) -> list[TaskRewind]:
        """Every rewind of the task, oldest first."""
        return rewinds_of(self._redis.hgetall(TaskKeys(task).rewinds).items())

    def pending(self, tasks: Iterable[str]) -> dict[str, list[TaskRewind]]:
        """Each task's rewinds whose re-read is not finished (their hold is still there). The
        holds of every task are read in one round trip (a pipeline; one per node on a cluster):
        a mapper asks once a second for each task it runs, and most have no rewind."""
        tasks = list(tasks)
        with self._redis.pipeline(transaction=False) as pipe:
            for task in tasks:
                pipe.hkeys(TaskKeys(task).backfill_holds)
            replies = pipe.execute()
        found = {}
        for task, fields in zip(tasks, replies, strict=True):
            holds = {text_of(field) for field in fields}
            rewinding = any(hold.startswith(REWIND_HOLD_PREFIX) for hold in holds)
            found[task] = [r for r in self.rewinds(task) if r.hold in holds] if rewinding else []
        return found

    def finish(self, task: str, rewind: TaskRewind) -> None:
        """The re-read reached every hand-over offset: release the watermark."""
        self._redis.hdel(TaskKeys(task).backfill_holds, rewind.hold)


def rewinds_of(fields: Iterable[tuple[bytes | str, bytes | str]]) -> list[TaskRewind]:
    """The rewinds in the fields of a task's rewinds hash, oldest first."""
    found = [TaskRewind.from_redis(text_of(v)) for k, v in fields if text_of(k) != "last"]
    return sorted(found, key=lambda r: r.generation)

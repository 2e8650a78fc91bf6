"""Where a backfill hands a partition over to the live mappers, and the watermark holds.

Two Redis hashes per task, next to the SEQ protocol's keys (same `mars:{T}:` hash tag):

- `mars:{T}:handover`: partition -> first offset the live mappers own (the backfill covers
  the offsets below it);
- `mars:{T}:backfill:holds`: backfill job id -> wall ms it registered. While any field exists
  the task's watermark is held (`mars.store.watermark.watermark_held_by_backfills`).

`claim_handover` records the hand-over point of a partition exactly once and, in the same Lua
script, seeds the live source state (`src[p] = handover - 1`), so live mappers, which seek to
`applied_offset + 1`, start exactly where the backfill ends. It refuses a partition whose live
mappers already applied records without a recorded hand-over: their first offset is unknown,
so any backfill below it could double count.

Part of the store (not of spark) because the reducer reads the holds too
(`SeqStore.snapshot_unit`, which reads them before the snapshots).
"""

from __future__ import annotations

from collections.abc import Mapping

from mars.clients.redis_connection import RedisClient
from mars.store.keys import TaskKeys
from mars.store.scripts import lua_source
from mars.store.state import NO_OFFSET, SourceState, pack_source, text_of


class HandoverError(Exception):
    """A backfill cannot start without risking a double count (live mappers got there first)."""


class BackfillCoordination:
    """Hand-over points and watermark holds of backfill jobs, in Redis."""

    def __init__(self, client: RedisClient) -> None:
        self._redis = client
        self._claim = client.register_script(lua_source("claim_handover"))

    def claim_handover(self, task: str, proposed_ends: Mapping[int, int]) -> dict[int, int]:
        """The hand-over offset of each partition: recorded earlier, or `proposed_ends[p]` now.

        Raises `HandoverError` naming the partitions the live mappers already write without a
        recorded hand-over.
        """
        if not proposed_ends:
            return {}
        keys = TaskKeys(task)
        args: list[str] = []
        for partition, end in sorted(proposed_ends.items()):
            seed = pack_source(SourceState(applied_offset=max(NO_OFFSET, end - 1)))
            args += [str(partition), str(end), seed]
        reply = self._claim(keys=[keys.sources, keys.handover], args=args)
        recorded: dict[int, int] = {}
        refused: list[int] = []
        for partition, value in zip(sorted(proposed_ends), reply, strict=True):
            text = text_of(value)
            if text:
                recorded[partition] = int(text)
            else:
                refused.append(partition)
        if refused:
            raise HandoverError(
                f"task {task}: live mappers already applied records of partitions {refused} "
                "without a recorded hand-over point; a backfill below their first offset could "
                "double count. Run the backfill before live mapping starts."
            )
        return recorded

    def handovers(self, task: str) -> dict[int, int]:
        raw = self._redis.hgetall(TaskKeys(task).handover)
        return {int(text_of(k)): int(text_of(v)) for k, v in raw.items()}

    def hold(self, task: str, job: str, *, now_ms: int) -> None:
        """Hold the task's watermark until `release(task, job)` (kept if the job fails)."""
        self._redis.hsetnx(TaskKeys(task).backfill_holds, job, str(now_ms))

    def release(self, task: str, job: str) -> None:
        self._redis.hdel(TaskKeys(task).backfill_holds, job)

    def holds(self, task: str) -> dict[str, int]:
        """Backfill job id -> wall ms it registered its hold."""
        raw = self._redis.hgetall(TaskKeys(task).backfill_holds)
        return {text_of(k): int(text_of(v)) for k, v in raw.items()}

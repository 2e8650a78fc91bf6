"""The task registry: task records under `/mars/tasks/<id>` in ZooKeeper.

Every write is a compare-and-set on the node's data version, so concurrent API servers (or an
API server and a reducer marking a task FAILED) never lose each other's updates.

Deletion: `delete` first marks the record DELETED (a versioned write, so watchers — reducers,
mappers — see an explicit "this task is going away" and can stop it cleanly), then removes the
node. If the process dies between the two steps the tombstone stays; it is invisible to
`get`/`list`, a second `delete` removes it, and `create` with the same id replaces it.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError, NotEmptyError

from mars.registry.errors import (
    ConcurrentUpdateError,
    InvalidTaskIdError,
    TaskExistsError,
    TaskNotFoundError,
)
from mars.registry.paths import ZkPaths
from mars.registry.task_record import TaskRecord, TaskStatus
from mars.registry.task_set_watch import TaskSetWatch
from mars.tasks.bucket_layout import BucketChange
from mars.tasks.rewind import TaskRewind
from mars.tasks.spec import Preaggregation, TaskSpec

_MAX_CAS_ATTEMPTS = 50
# After a lost compare-and-set, wait a random time up to a doubling cap before re-reading:
# without it two hot writers can keep cutting in on a third (or on each other) every time.
_CAS_BACKOFF_FIRST_S = 0.001
_CAS_BACKOFF_CAP_S = 0.1


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


def validate_task_id(task_id: str) -> None:
    """Raise `InvalidTaskIdError` unless `task_id` can be one ZooKeeper node name."""
    if not task_id or "/" in task_id or task_id in (".", "..") or "\x00" in task_id:
        raise InvalidTaskIdError(task_id)


class TaskRegistry:
    """Create, read, update status, delete and watch tasks in ZooKeeper.

    The client must be started by the caller; the registry never stops it.
    """

    def __init__(
        self,
        client: KazooClient,
        *,
        root: str = "/mars",
        clock_ms: Callable[[], int] = _wall_clock_ms,
    ) -> None:
        self._client = client
        self._paths = ZkPaths(root=root)
        self._clock_ms = clock_ms
        self._client.ensure_path(self._paths.tasks)

    @property
    def paths(self) -> ZkPaths:
        return self._paths

    def create(self, spec: TaskSpec, *, status: TaskStatus = TaskStatus.RUNNING) -> TaskRecord:
        """Register `spec` as RUNNING (or PAUSED: no mapper writes it until it is resumed, so a
        backfill can go first); `TaskExistsError` if the id is taken."""
        if status not in (TaskStatus.RUNNING, TaskStatus.PAUSED):
            raise ValueError(f"a task is registered RUNNING or PAUSED, not {status.value}")
        validate_task_id(spec.id)
        now = self._clock_ms()
        record = TaskRecord(spec=spec, status=status, reason=None, created_ms=now, updated_ms=now)
        path = self._paths.task(spec.id)
        try:
            self._client.create(path, record.to_bytes())
        except NodeExistsError:
            self._replace_tombstone(spec.id, record)
        return replace(record, version=0)

    def _replace_tombstone(self, task_id: str, record: TaskRecord) -> None:
        """The id exists: replace it only if it is a DELETED leftover of a crashed delete."""
        existing = self._read(task_id, include_deleted=True)
        if existing is None:
            # Removed between our create and read: one more plain attempt.
            try:
                self._client.create(self._paths.task(task_id), record.to_bytes())
                return
            except NodeExistsError as exc:
                raise TaskExistsError(task_id) from exc
        if existing.status is not TaskStatus.DELETED:
            raise TaskExistsError(task_id)
        path = self._paths.task(task_id)
        tx = self._client.transaction()
        tx.delete(path, version=existing.version)
        tx.create(path, record.to_bytes())
        results = tx.commit()
        if any(isinstance(r, Exception) for r in results):
            raise TaskExistsError(task_id)

    def get(self, task_id: str) -> TaskRecord:
        """The task's current record; `TaskNotFoundError` if absent or being deleted."""
        validate_task_id(task_id)
        record = self._read(task_id, include_deleted=False)
        if record is None:
            raise TaskNotFoundError(task_id)
        return record

    def list(self) -> list[TaskRecord]:
        """All registered tasks (without DELETED tombstones), sorted by id."""
        records = []
        for task_id in sorted(self._client.get_children(self._paths.tasks)):
            record = self._read(task_id, include_deleted=False)
            if record is not None:
                records.append(record)
        return records

    def set_status(self, task_id: str, status: TaskStatus, reason: str | None = None) -> TaskRecord:
        """Set the status (compare-and-set, retried on conflicts); returns the new record.

        FAILED needs a reason. DELETED is only reachable through `delete`.
        """
        validate_task_id(task_id)
        status = TaskStatus(status)
        if status is TaskStatus.DELETED:
            raise ValueError("use TaskRegistry.delete() to delete a task")
        if status is TaskStatus.FAILED and not reason:
            raise ValueError("a FAILED status needs a reason")
        return self._update(task_id, change=lambda r: replace(r, status=status, reason=reason))

    def set_preaggregation(self, task_id: str, preaggregation: Preaggregation) -> TaskRecord:
        """Hand the task's live pre-aggregation to mappers or to a Spark stream (compare-and-
        set). Safe while it runs: both write under the partitions' source ids through the
        same applied-offset check, so the overlap of the hand-over counts nothing twice."""
        validate_task_id(task_id)
        mode = Preaggregation(preaggregation)

        def change(record: TaskRecord) -> TaskRecord:
            options = replace(record.spec.options, preaggregation=mode)
            return replace(record, spec=replace(record.spec, options=options))

        return self._update(task_id, change=change)

    def add_bucket_change(
        self, task_id: str, change: BucketChange, *, generation: int
    ) -> TaskRecord:
        """Record epoch `generation` of the task's bucket layout, made in Redis first by
        `SeqStore.change_layout` (compare-and-set; a record that has it already is kept)."""
        validate_task_id(task_id)

        def add(record: TaskRecord) -> TaskRecord:
            options = record.spec.options
            if options.layout.generation >= generation:
                return record
            if options.layout.generation != generation - 1:
                raise ValueError(
                    f"task {task_id}: bucket layout generation {generation} cannot follow "
                    f"{options.layout.generation}"
                )
            layout = options.layout.changed(
                from_window_ms=change.from_window_ms, buckets=change.buckets
            )
            options = replace(options, bucket_changes=layout.changes)
            return replace(record, spec=replace(record.spec, options=options))

        return self._update(task_id, change=add)

    def record_rewinds(self, task_id: str, rewinds: Sequence[TaskRewind]) -> TaskRecord:
        """Add to the task's spec the rewinds Redis made (`mars.store.rewinds`) that it does
        not list yet (a record for operators: the protocol itself runs on Redis's)."""
        validate_task_id(task_id)

        def add(record: TaskRecord) -> TaskRecord:
            known = {r.generation for r in record.spec.rewinds}
            new = tuple(r for r in rewinds if r.generation not in known)
            if not new:
                return record
            listed = tuple(sorted((*record.spec.rewinds, *new), key=lambda r: r.generation))
            return replace(record, spec=replace(record.spec, rewinds=listed))

        return self._update(task_id, change=add)

    def replace_spec(self, task_id: str, spec: TaskSpec, *, generation: int) -> TaskRecord:
        """Store `spec` (a compatible replacement, mars.tasks.replacement) whose bucket layout
        ends with epoch `generation`, made in Redis first as its fence; refused (ValueError)
        unless the stored layout is the one before it."""
        validate_task_id(task_id)

        def change(record: TaskRecord) -> TaskRecord:
            stored = record.spec.options.layout.generation
            if stored != generation - 1 or spec.options.layout.generation != generation:
                raise ValueError(
                    f"task {task_id}: bucket layout generation {stored} changed under the "
                    f"replacement (it made generation {generation})"
                )
            return replace(record, spec=spec)

        return self._update(task_id, change=change)

    def delete(self, task_id: str) -> None:
        """Mark the task DELETED, then remove its node. Idempotent for tombstones."""
        validate_task_id(task_id)
        existing = self._read(task_id, include_deleted=True)
        if existing is None:
            raise TaskNotFoundError(task_id)
        if existing.status is not TaskStatus.DELETED:
            self._update(
                task_id, change=lambda r: replace(r, status=TaskStatus.DELETED, reason=None)
            )
        try:
            self._client.delete(self._paths.task(task_id))
        except NoNodeError:
            pass  # a concurrent delete finished first: same outcome
        except NotEmptyError as exc:  # nothing ever creates children of a task node
            raise TaskExistsError(task_id) from exc

    def watch(self, callback: Callable[[Mapping[str, TaskRecord]], None]) -> TaskSetWatch:
        """Call `callback(tasks)` now and after every task add, change or removal.

        `tasks` maps id -> record, DELETED tombstones excluded. Callbacks run on kazoo's
        threads, one at a time; keep them short. Stop with the returned handle's `stop()`.
        """
        return TaskSetWatch(self._client, self._paths.tasks, callback)

    def _read(self, task_id: str, *, include_deleted: bool) -> TaskRecord | None:
        try:
            data, stat = self._client.get(self._paths.task(task_id))
        except NoNodeError:
            return None
        record = TaskRecord.from_bytes(task_id, data, version=stat.version)
        if record.status is TaskStatus.DELETED and not include_deleted:
            return None
        return record

    def _update(self, task_id: str, *, change: Callable[[TaskRecord], TaskRecord]) -> TaskRecord:
        """Apply `change` to the stored record with compare-and-set (re-read and re-applied,
        after a jittered backoff, on a conflict); a DELETED task is not found."""
        path = self._paths.task(task_id)
        for attempt in range(_MAX_CAS_ATTEMPTS):
            if attempt:
                cap_s = min(_CAS_BACKOFF_CAP_S, _CAS_BACKOFF_FIRST_S * 2**attempt)
                time.sleep(random.uniform(0, cap_s))
            current = self._read(task_id, include_deleted=True)
            if current is None or current.status is TaskStatus.DELETED:
                raise TaskNotFoundError(task_id)
            updated = replace(change(current), updated_ms=self._clock_ms(), version=-1)
            try:
                stat = self._client.set(path, updated.to_bytes(), version=current.version)
            except BadVersionError:
                continue  # someone wrote in between: re-read and re-apply
            except NoNodeError as exc:
                raise TaskNotFoundError(task_id) from exc
            return replace(updated, version=stat.version)
        raise ConcurrentUpdateError(task_id, _MAX_CAS_ATTEMPTS)

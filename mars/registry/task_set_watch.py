"""Watch the whole set of tasks: a ChildrenWatch on the tasks node plus a DataWatch per task.

The callback always receives the full current set (id -> record), never a delta, so a consumer
can simply recompute from it. Tombstones (DELETED) and unreadable nodes are left out; an
unreadable node is logged once per version.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from kazoo.client import KazooClient
from kazoo.protocol.states import ZnodeStat
from kazoo.recipe.watchers import ChildrenWatch, DataWatch

from mars.registry.errors import CorruptTaskRecordError
from mars.registry.task_record import TaskRecord, TaskStatus

log = logging.getLogger(__name__)

TaskSetCallback = Callable[[Mapping[str, TaskRecord]], None]


class TaskSetWatch:
    """Keeps a live id -> record map of a tasks node and reports every change of it.

    Created by `TaskRegistry.watch`. kazoo re-establishes both kinds of watch after a
    reconnection, so the map stays current across session loss.
    """

    def __init__(self, client: KazooClient, tasks_path: str, callback: TaskSetCallback) -> None:
        self._client = client
        self._tasks_path = tasks_path
        self._callback = callback
        self._lock = threading.RLock()
        self._records: dict[str, TaskRecord] = {}
        self._children: set[str] = set()
        self._watched: set[str] = set()  # children with a live DataWatch
        self._stopped = False
        self._batching = False  # suppress per-task notifications while (re)building
        self._last_sent: dict[str, TaskRecord] | None = None
        with self._lock:
            self._batching = True
            ChildrenWatch(client, tasks_path, self._on_children)
            self._batching = False
            self._notify()

    def stop(self) -> None:
        """No more callbacks; the kazoo watches unregister at their next event."""
        with self._lock:
            self._stopped = True

    @property
    def tasks(self) -> Mapping[str, TaskRecord]:
        """The current snapshot (read-only)."""
        with self._lock:
            return MappingProxyType(dict(self._records))

    def _on_children(self, children: list[str]) -> bool:
        with self._lock:
            if self._stopped:
                return False
            self._children = set(children)
            for gone in set(self._records) - self._children:
                del self._records[gone]
            was_batching = self._batching
            self._batching = True
            try:
                for task_id in sorted(self._children - self._watched):
                    self._watched.add(task_id)
                    DataWatch(self._client, f"{self._tasks_path}/{task_id}", self._data_fn(task_id))
            finally:
                self._batching = was_batching
            self._notify()
            return True

    def _data_fn(self, task_id: str) -> Callable[[bytes | None, ZnodeStat | None, Any], bool]:
        def on_data(data: bytes | None, stat: ZnodeStat | None, _event: Any = None) -> bool:
            with self._lock:
                if self._stopped:
                    return False
                self._apply(task_id, data, stat)
                keep = data is not None or task_id in self._children
                if not keep:
                    self._watched.discard(task_id)
                self._notify()
                return keep

        return on_data

    def _apply(self, task_id: str, data: bytes | None, stat: ZnodeStat | None) -> None:
        if data is None or stat is None:
            self._records.pop(task_id, None)
            return
        try:
            record = TaskRecord.from_bytes(task_id, data, version=stat.version)
        except CorruptTaskRecordError as exc:
            log.error("ignoring task node: %s", exc)
            self._records.pop(task_id, None)
            return
        if record.status is TaskStatus.DELETED:
            self._records.pop(task_id, None)
        else:
            self._records[task_id] = record

    def _notify(self) -> None:
        if self._batching or self._stopped:
            return
        if self._last_sent == self._records:
            return  # e.g. a tombstone write followed by the node removal
        snapshot = dict(self._records)
        self._last_sent = snapshot
        try:
            self._callback(MappingProxyType(snapshot))
        except Exception:
            log.exception("task set callback failed")

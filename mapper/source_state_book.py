"""This mapper's view of each task's progress per partition: applied offset and stream time.

Redis (`SeqStore`) holds the truth; the view is what the mapper believes it is, loaded from
Redis when a partition is assigned (or first seen) and advanced after every APPLIED batch. The
view is the `expected` side of `apply_batch`, so a stale view is rejected, never double counted.
"""

from __future__ import annotations

from collections.abc import Iterable

from mars.store import SeqStore, SourceState

TaskView = dict[int, SourceState]  # partition -> applied offset + stream time


class SourceStateBook:
    """Per task id, per partition of its source topic: the believed `SourceState`."""

    def __init__(self, store: SeqStore) -> None:
        self._store = store
        self._views: dict[str, TaskView] = {}

    def load(self, task_id: str, partitions: Iterable[int]) -> TaskView:
        """(Re)read the given partitions' states from Redis into the view."""
        wanted = list(partitions)
        view = self._views.setdefault(task_id, {})
        if wanted:
            stored = self._store.read_sources(task_id)
            for partition in wanted:
                view[partition] = stored.get(partition, SourceState())
        return view

    def view(self, task_id: str, partitions: Iterable[int]) -> TaskView:
        """The task's view, loading partitions seen for the first time from Redis."""
        view = self._views.get(task_id, {})
        missing = [p for p in partitions if p not in view]
        return self.load(task_id, missing) if missing or task_id not in self._views else view

    def start_offset(self, task_ids: Iterable[str], partition: int) -> int | None:
        """Where a partition must be read from so every task sees its unapplied records: the
        smallest `applied_offset + 1` over the tasks (None when no task has a view of it)."""
        starts = [
            view[partition].applied_offset + 1
            for task_id in task_ids
            if (view := self._views.get(task_id)) is not None and partition in view
        ]
        return min(starts) if starts else None

    def forget_partitions(self, task_ids: Iterable[str], partitions: Iterable[int]) -> None:
        """Partitions revoked from this mapper: their views go stale, drop them."""
        dropped = list(partitions)
        for task_id in task_ids:
            view = self._views.get(task_id)
            if view is not None:
                for partition in dropped:
                    view.pop(partition, None)

    def forget_task(self, task_id: str) -> None:
        self._views.pop(task_id, None)

"""Errors of the task registry.

`RegistryError` is the base; callers that only need "the registry said no" catch it. Connection
problems are kazoo's own exceptions (`kazoo.exceptions.ConnectionLoss`, `SessionExpiredError`):
they are recoverable by retrying and are not wrapped.
"""

from __future__ import annotations


class RegistryError(Exception):
    """Base class of every error the task registry raises on purpose."""


class TaskNotFoundError(RegistryError):
    """No task with this id is registered (or it is being deleted)."""

    def __init__(self, task_id: str) -> None:
        super().__init__(f"task {task_id!r} is not registered")
        self.task_id = task_id


class TaskExistsError(RegistryError):
    """A task with this id is already registered."""

    def __init__(self, task_id: str) -> None:
        super().__init__(f"task {task_id!r} is already registered")
        self.task_id = task_id


class ConcurrentUpdateError(RegistryError):
    """A compare-and-set update kept losing against other writers and gave up."""

    def __init__(self, task_id: str, attempts: int) -> None:
        super().__init__(f"task {task_id!r}: gave up after {attempts} conflicting updates")
        self.task_id = task_id
        self.attempts = attempts


class CorruptTaskRecordError(RegistryError):
    """A task node holds data that is not a valid task record."""

    def __init__(self, task_id: str, reason: str) -> None:
        super().__init__(f"task {task_id!r}: unreadable record: {reason}")
        self.task_id = task_id
        self.reason = reason


class InvalidTaskIdError(RegistryError, ValueError):
    """The id cannot name a ZooKeeper node (empty, '.', '..', or contains '/')."""

    def __init__(self, task_id: str) -> None:
        super().__init__(f"invalid task id {task_id!r}: must be non-empty, without '/'")
        self.task_id = task_id

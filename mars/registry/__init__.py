"""The task registry in ZooKeeper (`/mars/tasks/<id>`)."""

from mars.registry.errors import (
    ConcurrentUpdateError,
    CorruptTaskRecordError,
    InvalidTaskIdError,
    RegistryError,
    TaskExistsError,
    TaskNotFoundError,
)
from mars.registry.paths import ZkPaths
from mars.registry.task_record import TaskRecord, TaskStatus
from mars.registry.task_registry import TaskRegistry, validate_task_id
from mars.registry.task_set_watch import TaskSetCallback, TaskSetWatch

__all__ = [
    "ConcurrentUpdateError",
    "CorruptTaskRecordError",
    "InvalidTaskIdError",
    "RegistryError",
    "TaskExistsError",
    "TaskNotFoundError",
    "TaskRecord",
    "TaskRegistry",
    "TaskSetCallback",
    "TaskSetWatch",
    "TaskStatus",
    "ZkPaths",
    "validate_task_id",
]

"""A registered task as stored in ZooKeeper: its spec plus lifecycle status.

Node data is UTF-8 JSON:

    {"spec": <TaskSpec.to_json_dict()>, "status": "RUNNING", "reason": null,
     "created_ms": 1700000000000, "updated_ms": 1700000000000}

`version` is not stored: it is the ZooKeeper data version of the node when it was read, the
token for compare-and-set updates.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from mars.registry.errors import CorruptTaskRecordError
from mars.tasks.spec import TaskSpec


class TaskStatus(StrEnum):
    """Lifecycle of a task. Only RUNNING tasks are processed by mappers and reducers."""

    RUNNING = "RUNNING"
    PAUSED = "PAUSED"
    FAILED = "FAILED"  # always with a reason
    DELETED = "DELETED"  # transient: the node is removed right after (see TaskRegistry.delete)


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskRecord:
    """One task node: the spec, its status, and the ZooKeeper version it was read at."""

    spec: TaskSpec
    status: TaskStatus
    reason: str | None
    created_ms: int
    updated_ms: int
    version: int = -1  # ZooKeeper data version; -1 when not read from ZooKeeper

    @property
    def task_id(self) -> str:
        return self.spec.id

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "spec": self.spec.to_json_dict(),
            "status": self.status.value,
            "reason": self.reason,
            "created_ms": self.created_ms,
            "updated_ms": self.updated_ms,
        }

    def to_bytes(self) -> bytes:
        return json.dumps(self.to_json_dict(), separators=(",", ":")).encode()

    @classmethod
    def from_bytes(cls, task_id: str, data: bytes, *, version: int) -> TaskRecord:
        """Decode a task node; raises `CorruptTaskRecordError` on anything malformed."""
        try:
            doc = json.loads(data)
            return cls(
                spec=TaskSpec.from_json_dict(doc["spec"]),
                status=TaskStatus(doc["status"]),
                reason=doc.get("reason"),
                created_ms=int(doc["created_ms"]),
                updated_ms=int(doc["updated_ms"]),
                version=version,
            )
        except (ValueError, KeyError, TypeError) as exc:  # JSONDecodeError is a ValueError
            raise CorruptTaskRecordError(task_id, f"{type(exc).__name__}: {exc}") from exc

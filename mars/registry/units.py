"""The unit of reducer ownership: one bucket of one task."""

from __future__ import annotations

from typing import NamedTuple


class Unit(NamedTuple):
    """(task id, bucket). Written as `"<task>/<bucket>"` in the assignment node."""

    task_id: str
    bucket: int

    @property
    def key(self) -> str:
        return f"{self.task_id}/{self.bucket}"

    @classmethod
    def parse(cls, key: str) -> Unit:
        """Inverse of `key`; task ids never contain '/' (they are ZooKeeper node names)."""
        task_id, sep, bucket = key.rpartition("/")
        if not sep or not task_id or not bucket.isdigit():
            raise ValueError(f"not a unit key: {key!r}")
        return cls(task_id, int(bucket))

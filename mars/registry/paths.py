"""The ZooKeeper layout of a Mars cluster, in one place.

Every node Mars uses lives under one root (default `/mars`), so two clusters (or two test
runs) can share one ZooKeeper ensemble by using different roots.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class ZkPaths:
    """Paths of the Mars nodes under `root`."""

    root: str = "/mars"

    def __post_init__(self) -> None:
        if not self.root.startswith("/") or (self.root != "/" and self.root.endswith("/")):
            raise ValueError(f"ZooKeeper root must be absolute, no trailing slash: {self.root!r}")

    def _under(self, name: str) -> str:
        return f"{self.root.rstrip('/')}/{name}"

    @property
    def tasks(self) -> str:
        """Parent of the task nodes `<tasks>/<task id>` (persistent, JSON records)."""
        return self._under("tasks")

    def task(self, task_id: str) -> str:
        return f"{self.tasks}/{task_id}"

    @property
    def reducers(self) -> str:
        """Parent of the reducers' ephemeral membership nodes."""
        return self._under("reducers")

    def reducer(self, member_id: str) -> str:
        return f"{self.reducers}/{member_id}"

    @property
    def mappers(self) -> str:
        """Parent of the mappers' ephemeral membership nodes."""
        return self._under("mappers")

    @property
    def election(self) -> str:
        """Parent of the reducer leader election's contender nodes."""
        return self._under("election")

    @property
    def incarnations(self) -> str:
        """Parent of the ephemeral nodes of the live reducer incarnations (one transactional
        producer each: `reducer/process_output.py`)."""
        return self._under("incarnations")

    def incarnation(self, incarnation_id: str) -> str:
        return f"{self.incarnations}/{incarnation_id}"

    @property
    def holders(self) -> str:
        """Parent of the units' holder nodes `<holders>/<task id>/<bucket>` (persistent)."""
        return self._under("holders")

    def holder(self, task_id: str, bucket: int) -> str:
        return f"{self.holders}/{task_id}/{bucket}"

    @property
    def assignment(self) -> str:
        """The one node holding the current (task, bucket) -> reducer assignment."""
        return self._under("assignment")

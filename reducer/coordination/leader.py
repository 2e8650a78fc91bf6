"""What the elected leader does: keep `/mars/assignment` equal to placement(units, members).

The leader watches the members (ChildrenWatch on `/mars/reducers`) and the tasks
(`TaskRegistry.watch`); any change marks the assignment dirty, and after a short debounce the
leader recomputes it and writes it if it differs. It also re-checks once a second, so a missed
event costs at most a second.

Fencing: every write is a multi-op transaction that first checks the leader's own election
node. That node is ephemeral, so a leader whose session expired (and who may not know yet)
can never overwrite the assignment of its successor.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping

from kazoo.client import KazooClient
from kazoo.exceptions import (
    BadVersionError,
    ConnectionLoss,
    NodeExistsError,
    NoNodeError,
    OperationTimeoutError,
    SessionExpiredError,
)
from kazoo.recipe.watchers import ChildrenWatch

from mars.registry import TaskRecord, TaskRegistry
from mars.registry.paths import ZkPaths
from mars.registry.unit_assignment import UnitAssignment, read_assignment, units_of
from mars.registry.units import Unit
from reducer.coordination.load_balance import LoadBalancer, Refined
from reducer.coordination.placement import place

log = logging.getLogger(__name__)

# Optional refinement of the consistent-hash placement, e.g. a load-aware `balance_load`
# closure: (placement, members) -> placement.
Refinement = Callable[[Mapping[Unit, str], frozenset[str]], Mapping[Unit, str]]

_RECOVERABLE = (ConnectionLoss, OperationTimeoutError, SessionExpiredError, BadVersionError)


class LeadershipLostError(Exception):
    """The leader's election node is gone: it must stop acting as leader at once."""


class AssignmentLeader:
    """One leadership term. `run` returns when `stop` is set or leadership is lost."""

    def __init__(
        self,
        client: KazooClient,
        *,
        paths: ZkPaths,
        member_id: str,
        fence_path: str,
        vnodes: int = 64,
        refine: Refinement | None = None,
        balancer: LoadBalancer | None = None,
        debounce_s: float = 0.1,
        resync_s: float = 1.0,
    ) -> None:
        self._client = client
        self._paths = paths
        self._member_id = member_id
        self._fence_path = fence_path
        self._vnodes = vnodes
        self._refine = refine
        self._balancer = balancer
        self._debounce_s = debounce_s
        self._resync_s = resync_s
        self._dirty = threading.Event()
        self._lock = threading.Lock()
        self._members: frozenset[str] = frozenset()
        self._units: frozenset[Unit] = frozenset()
        self._watching = True

    def wake(self) -> None:
        """Recompute soon (also used to make `run` notice `stop`)."""
        self._dirty.set()

    def run(self, stop: threading.Event) -> None:
        """Lead until `stop` is set; raises `LeadershipLostError` when fenced off."""
        self._client.ensure_path(self._paths.reducers)
        task_watch = TaskRegistry(self._client, root=self._paths.root).watch(self._on_tasks)
        ChildrenWatch(self._client, self._paths.reducers, self._on_members)
        try:
            while not stop.is_set():
                self._dirty.wait(timeout=self._resync_s)
                if stop.is_set():
                    return
                if stop.wait(self._debounce_s):  # let a burst of changes settle
                    return
                self._dirty.clear()
                try:
                    self.publish()
                except _RECOVERABLE as exc:
                    log.warning("assignment not written (%s); retrying", type(exc).__name__)
        finally:
            with self._lock:
                self._watching = False
            task_watch.stop()

    def _on_tasks(self, tasks: Mapping[str, TaskRecord]) -> None:
        with self._lock:
            self._units = frozenset(units_of(tasks.values()))
        self._dirty.set()

    def _on_members(self, children: list[str]) -> bool:
        with self._lock:
            if not self._watching:
                return False
            self._members = frozenset(children)
        self._dirty.set()
        return True

    def compute(self, moves: Mapping[Unit, str] | None = None) -> Refined:
        """The assignment the cluster should have now, given the load `moves` in force."""
        with self._lock:
            units, members = self._units, self._members
        placement: Mapping[Unit, str] = place(units, members, vnodes=self._vnodes)
        if self._refine is not None and placement:
            placement = self._refine(placement, members)
        if self._balancer is None or not placement:
            return Refined(units=dict(placement), moves={})
        return self._balancer.refine(placement, members, moves or {})

    def publish(self) -> UnitAssignment | None:
        """Write the computed assignment if it differs from the stored one; fenced."""
        current = read_assignment(self._client, self._paths.assignment, lenient=True)
        refined = self.compute(None if current is None else current.moves)
        units, moves = refined.units, refined.moves
        if (
            current is not None
            and current.units == units
            and current.moves == moves
            and current.leader == self._member_id
        ):
            return None
        assignment = UnitAssignment(
            generation=(current.generation + 1) if current else 1,
            leader=self._member_id,
            units=units,
            moves=moves,
        )
        tx = self._client.transaction()
        tx.check(self._fence_path, 0)  # our ephemeral election node, never modified
        if current is None:
            tx.create(self._paths.assignment, assignment.to_bytes())
        else:
            tx.set_data(self._paths.assignment, assignment.to_bytes(), version=current.version)
        results = tx.commit()
        if isinstance(results[0], NoNodeError | BadVersionError):
            raise LeadershipLostError(f"election node {self._fence_path} is gone")
        if isinstance(results[1], BadVersionError | NodeExistsError):
            raise BadVersionError()  # someone wrote in between: recompute on the next tick
        if isinstance(results[1], Exception):
            raise results[1]
        log.info(
            "assignment generation %d: %d units over %d members, %d moved by load",
            assignment.generation,
            len(units),
            len(set(units.values())),
            len(moves),
        )
        return assignment

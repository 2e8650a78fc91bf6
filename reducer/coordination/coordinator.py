"""`ReducerCoordinator`: everything one reducer process does in ZooKeeper.

- joins: ephemeral `/mars/reducers/<member id>` (host, pid);
- campaigns in `/mars/election` (kazoo's lock-based Election); while leading it runs an
  `AssignmentLeader`, which keeps `/mars/assignment` = placement(units, members);
- follows `/mars/assignment` and calls `on_assignment(units it owns)` when that set changes;
- session safety: on SUSPENDED or LOST it calls `on_suspended()` at once — the reducer must
  stop emitting — and delivers no assignment until the connection is back; then (after
  re-registering if the session was lost) it re-reads the assignment and calls
  `on_assignment` again, which is the signal to resume.

Callbacks: `on_assignment` and `on_suspended` never run concurrently with each other, and
`on_suspended` runs on kazoo's connection thread, so both must be quick (flip a flag, hand
work to the reducer's own threads). Ownership is advisory between two owners for a moment
during a move; the unit's holder node and the fence of its holder's Kafka producer are what
stop a zombie owner (`reducer/process_output.py`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from kazoo.client import KazooClient
from kazoo.exceptions import (
    ConnectionClosedError,
    ConnectionLoss,
    KazooException,
    OperationTimeoutError,
    SessionExpiredError,
)
from kazoo.protocol.states import KazooState, ZnodeStat
from kazoo.recipe.election import Election
from kazoo.recipe.watchers import DataWatch

from mars.registry.membership import MemberIdInUseError, Membership
from mars.registry.paths import ZkPaths
from mars.registry.unit_assignment import UnitAssignment, UnitAssignmentFormatError, read_assignment
from mars.registry.units import Unit
from reducer.coordination.leader import AssignmentLeader, LeadershipLostError, Refinement
from reducer.coordination.load_balance import LoadBalancer

log = logging.getLogger(__name__)

AssignmentCallback = Callable[[frozenset[Unit]], None]
SuspendCallback = Callable[[], None]

_RETRYABLE = (ConnectionLoss, OperationTimeoutError, SessionExpiredError, MemberIdInUseError)


class ReducerCoordinator:
    """Membership, leader election, assignment and session safety of one reducer process.

    The client must be started by the caller and outlive `stop()`; the coordinator never
    stops it. A stopped coordinator cannot be started again (make a new one).
    """

    def __init__(
        self,
        client: KazooClient,
        *,
        member_id: str,
        on_assignment: AssignmentCallback,
        on_suspended: SuspendCallback,
        root: str = "/mars",
        vnodes: int = 64,
        refine: Refinement | None = None,
        balancer: LoadBalancer | None = None,
        debounce_s: float = 0.1,
        metrics_address: str | None = None,
    ) -> None:
        self._client = client
        self._paths = ZkPaths(root=root)
        self._member_id = member_id
        self._on_assignment = on_assignment
        self._on_suspended = on_suspended
        self._vnodes = vnodes
        self._refine = refine
        self._balancer = balancer
        self._debounce_s = debounce_s
        self._membership = Membership(
            client, paths=self._paths, member_id=member_id, metrics_address=metrics_address
        )

        self._callback_lock = threading.RLock()  # serializes the user callbacks + their state
        self._assignment: UnitAssignment | None = None
        self._delivered: frozenset[Unit] | None = None  # None: deliver on next chance
        self._suspended = False
        self._session_lost = False
        self._loss_epoch = 0  # bumped on every SUSPENDED/LOST

        self._state_lock = threading.Lock()  # guards the election/leader handles below
        self._election: Election | None = None
        self._leader: AssignmentLeader | None = None
        self._term_over: threading.Event | None = None

        self._started = False
        self._stop = threading.Event()
        self._resync = threading.Event()
        self._threads: list[threading.Thread] = []

    @property
    def member_id(self) -> str:
        return self._member_id

    @property
    def is_leader(self) -> bool:
        with self._state_lock:
            return self._leader is not None

    def current_assignment(self) -> UnitAssignment | None:
        """The whole assignment as last seen (None before the first leader wrote one)."""
        with self._callback_lock:
            return self._assignment

    def owned_units(self) -> frozenset[Unit]:
        """Units this member may process now: empty while suspended or stopped."""
        with self._callback_lock:
            if self._suspended or self._stop.is_set() or self._assignment is None:
                return frozenset()
            return self._assignment.owned_by(self._member_id)

    def owns(self, unit: Unit) -> bool:
        """Cheap gate for the emit path: False while suspended, stopped or not the owner."""
        return unit in self.owned_units()

    def start(self) -> None:
        """Register, start following the assignment and start campaigning."""
        if self._started:
            raise RuntimeError("ReducerCoordinator.start() called twice")
        self._started = True
        self._client.add_listener(self._on_connection_state)
        self._membership.register()
        self._client.ensure_path(self._paths.election)
        DataWatch(self._client, self._paths.assignment, self._on_assignment_node)
        for name, target in (("campaign", self._campaign), ("resync", self._resync_loop)):
            thread = threading.Thread(
                target=target, name=f"mars-{name}-{self._member_id}", daemon=True
            )
            thread.start()
            self._threads.append(thread)

    def stop(self, *, timeout_s: float = 10.0) -> None:
        """Resign leadership, leave the cluster and stop all callbacks."""
        if not self._started or self._stop.is_set():
            return
        self._stop.set()
        with self._state_lock:
            election, leader, term_over = self._election, self._leader, self._term_over
        if election is not None:
            election.cancel()
        if term_over is not None and leader is not None:
            term_over.set()
            leader.wake()
        self._resync.set()
        for thread in self._threads:
            thread.join(timeout_s)
        try:
            self._membership.unregister()
        except (KazooException, ConnectionClosedError) as exc:
            log.info("leaving without unregistering (%s); the session end removes the node", exc)
        self._client.remove_listener(self._on_connection_state)

    # -- following the assignment -------------------------------------------------------

    def _on_assignment_node(
        self, data: bytes | None, stat: ZnodeStat | None, _event: object = None
    ) -> bool:
        if self._stop.is_set():
            return False
        if data is None or stat is None:
            assignment = None
        else:
            try:
                assignment = UnitAssignment.from_bytes(data, version=stat.version)
            except UnitAssignmentFormatError as exc:
                log.error("ignoring assignment update: %s", exc)
                return True
        with self._callback_lock:
            self._remember(assignment)
            self._deliver(force=False)
        return True

    def _remember(self, assignment: UnitAssignment | None) -> None:
        """Keep the newest assignment seen (watch and resync may race)."""
        current = self._assignment
        if assignment is None or current is None or assignment.version >= current.version:
            self._assignment = assignment

    def _deliver(self, *, force: bool) -> None:
        with self._callback_lock:
            if self._suspended or self._stop.is_set():
                return
            owned = self.owned_units()
            if not force and owned == self._delivered:
                return
            self._delivered = owned
            try:
                self._on_assignment(owned)
            except Exception:
                log.exception("on_assignment callback failed")

    # -- session safety -----------------------------------------------------------------

    def _on_connection_state(self, state: str) -> None:
        """kazoo's connection thread: no ZooKeeper calls here, only flags and callbacks."""
        if state in (KazooState.SUSPENDED, KazooState.LOST):
            with self._callback_lock:
                was_suspended = self._suspended
                self._suspended = True
                self._loss_epoch += 1
                self._delivered = None
                if state == KazooState.LOST:
                    self._session_lost = True
                if not was_suspended and not self._stop.is_set():
                    try:
                        self._on_suspended()
                    except Exception:
                        log.exception("on_suspended callback failed")
            if state == KazooState.LOST:
                self._end_leadership_term()
        elif state == KazooState.CONNECTED:
            self._resync.set()

    def _end_leadership_term(self) -> None:
        """The session is gone, and so is our election node: stop leading at once."""
        with self._state_lock:
            leader, term_over = self._leader, self._term_over
        if leader is not None and term_over is not None:
            term_over.set()
            leader.wake()

    def _resync_loop(self) -> None:
        """After a reconnection: re-register if needed, re-read and re-deliver the assignment."""
        while not self._stop.is_set():
            self._resync.wait(timeout=1.0)
            if self._stop.is_set():
                return
            if not self._resync.is_set():
                continue
            self._resync.clear()
            with self._callback_lock:
                if not self._suspended:
                    continue
                epoch, lost = self._loss_epoch, self._session_lost
            try:
                if lost:
                    self._membership.register()
                assignment = read_assignment(self._client, self._paths.assignment)
            except _RETRYABLE as exc:
                log.info("resync failed (%s); retrying", type(exc).__name__)
                self._resync.set()
                self._stop.wait(0.5)
                continue
            except ConnectionClosedError:
                return
            with self._callback_lock:
                if epoch != self._loss_epoch or not self._client.connected:
                    continue  # disconnected again meanwhile: the next CONNECTED retries
                self._suspended = False
                self._session_lost = False
                self._remember(assignment)
                self._deliver(force=True)
                log.info("member %s resumed after reconnection", self._member_id)

    # -- election -----------------------------------------------------------------------

    def _campaign(self) -> None:
        while not self._stop.is_set():
            election = self._client.Election(self._paths.election, self._member_id)
            with self._state_lock:
                self._election = election
            if self._stop.is_set():
                return  # stop() may have missed this election object
            try:
                election.run(self._lead, election)
            except LeadershipLostError as exc:
                log.warning("member %s lost leadership: %s", self._member_id, exc)
            except ConnectionClosedError:
                return  # the client was stopped under us
            except KazooException as exc:
                log.warning("election round failed (%r); campaigning again", exc)
            except Exception:
                # A bug must not silently end the campaign: log it and stand again.
                log.exception("leader term of %s crashed; campaigning again", self._member_id)
            self._stop.wait(0.2)

    def _lead(self, election: Election) -> None:
        lock = election.lock
        fence_path = f"{lock.path}/{lock.node}"
        term_over = threading.Event()
        leader = AssignmentLeader(
            self._client,
            paths=self._paths,
            member_id=self._member_id,
            fence_path=fence_path,
            vnodes=self._vnodes,
            refine=self._refine,
            balancer=self._balancer,
            debounce_s=self._debounce_s,
        )
        with self._state_lock:
            self._leader, self._term_over = leader, term_over
        log.info("member %s is the leader", self._member_id)
        try:
            if not self._stop.is_set():
                leader.run(term_over)
        finally:
            with self._state_lock:
                self._leader, self._term_over = None, None

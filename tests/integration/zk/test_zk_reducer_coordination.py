"""Reducer coordination against a real ZooKeeper: several coordinators in one process, each
with its own KazooClient (its own session), as separate reducer processes would have."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pytest
from kazoo.client import KazooClient

from mars.registry import TaskRegistry, TaskStatus
from mars.registry.cluster_view import cluster_view
from mars.registry.paths import ZkPaths
from mars.registry.unit_assignment import read_assignment
from mars.registry.units import Unit
from mars.tasks.spec import TaskSpec
from reducer.coordination import AssignmentLeader, LeadershipLostError, ReducerCoordinator

ClientFactory = Callable[..., KazooClient]  # fixtures from this folder's conftest.py
SpecFactory = Callable[..., TaskSpec]
Eventually = Callable[..., None]


@dataclass
class Member:
    """One coordinator plus a record of what its callbacks told the reducer."""

    member_id: str
    client: KazooClient
    coordinator: ReducerCoordinator
    owned: frozenset[Unit] = frozenset()
    emitting: bool = False
    suspensions: int = 0
    events: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def on_assignment(self, units: frozenset[Unit]) -> None:
        with self.lock:
            self.owned, self.emitting = units, True
            self.events.append("assignment")

    def on_suspended(self) -> None:
        with self.lock:
            self.emitting = False
            self.suspensions += 1
            self.events.append("suspended")


@pytest.fixture
def start_member(
    new_zk_client: ClientFactory, zk_root: str, zk_client: KazooClient
) -> Iterator[Callable[[str], Member]]:
    """Start coordinators; they stop before `zk_client` (set up first) removes the root."""
    members: list[Member] = []

    def start(member_id: str) -> Member:
        client = new_zk_client()
        member = Member(member_id=member_id, client=client, coordinator=None)  # type: ignore[arg-type]
        member.coordinator = ReducerCoordinator(
            client,
            member_id=member_id,
            on_assignment=member.on_assignment,
            on_suspended=member.on_suspended,
            root=zk_root,
            debounce_s=0.05,
        )
        member.coordinator.start()
        members.append(member)
        return member

    yield start
    for member in members:
        member.coordinator.stop()


@pytest.fixture
def registry(zk_client: KazooClient, zk_root: str) -> TaskRegistry:
    return TaskRegistry(zk_client, root=zk_root)


def _all_units(registry: TaskRegistry) -> set[Unit]:
    return {
        Unit(r.task_id, b)
        for r in registry.list()
        if r.status is TaskStatus.RUNNING
        for b in range(r.spec.options.buckets)
    }


def _partition_ok(members: list[Member], expected: set[Unit]) -> bool:
    """Every expected unit is owned by exactly one of `members`, per their callbacks."""
    owned = [m.owned for m in members]
    union = set().union(*owned)
    return union == expected and sum(len(o) for o in owned) == len(expected)


def _settled(members: list[Member], expected: set[Unit]) -> bool:
    """Partitioned among *all* `members` (each owns something), not a subset that joined first."""
    return _partition_ok(members, expected) and all(m.owned for m in members)


def _leaders(members: list[Member]) -> list[str]:
    return [m.member_id for m in members if m.coordinator.is_leader]


def test_one_leader_and_every_unit_owned_exactly_once(
    start_member: Callable[[str], Member],
    registry: TaskRegistry,
    make_spec: SpecFactory,
    eventually: Eventually,
    zk_client: KazooClient,
    zk_root: str,
) -> None:
    registry.create(make_spec("clicks", buckets=8))
    registry.create(make_spec("views", buckets=4))
    members = [start_member(name) for name in ("r-a", "r-b", "r-c")]
    expected = _all_units(registry)
    assert len(expected) == 12

    eventually(lambda: len(_leaders(members)) == 1, what="exactly one leader")
    eventually(lambda: _settled(members, expected), what="all units owned once, by all")

    view = cluster_view(zk_client, root=zk_root)
    assert view["leader"] == _leaders(members)[0]
    assert set(view["members"]) == {"r-a", "r-b", "r-c"}
    assert sum(m["units"] for m in view["members"].values()) == 12
    assert len(view["assignment"]["units"]) == 12

    # Task changes reach the owners: a new task adds units, a pause removes them.
    registry.create(make_spec("more", buckets=3))
    eventually(lambda: _partition_ok(members, _all_units(registry)), what="new task placed")
    registry.set_status("clicks", TaskStatus.PAUSED)
    eventually(lambda: _partition_ok(members, _all_units(registry)), what="paused task gone")
    assert not any(u.task_id == "clicks" for m in members for u in m.owned)


def test_a_leaving_member_hands_its_units_to_the_others(
    start_member: Callable[[str], Member],
    registry: TaskRegistry,
    make_spec: SpecFactory,
    eventually: Eventually,
) -> None:
    registry.create(make_spec("clicks", buckets=16))
    members = [start_member(name) for name in ("r-a", "r-b", "r-c")]
    expected = _all_units(registry)
    eventually(lambda: _settled(members, expected), what="initial placement")

    leader = _leaders(members)[0]
    leaving = next(m for m in members if m.member_id != leader)
    stayers = [m for m in members if m is not leaving]
    kept = {m.member_id: m.owned for m in stayers}
    leaving.client.stop()  # the process vanishes: its session (and ephemeral node) ends

    eventually(lambda: _partition_ok(stayers, expected), timeout=5, what="units re-assigned")
    # Consistent hashing: the stayers keep what they had and only gain.
    assert all(kept[m.member_id] <= m.owned for m in stayers)
    assert not leaving.emitting  # its own session loss told it to stop


def test_when_the_leader_dies_another_takes_over_and_the_assignment_stays_complete(
    start_member: Callable[[str], Member],
    registry: TaskRegistry,
    make_spec: SpecFactory,
    eventually: Eventually,
    zk_client: KazooClient,
    zk_root: str,
) -> None:
    registry.create(make_spec("clicks", buckets=24))
    members = [start_member(name) for name in ("r-a", "r-b", "r-c")]
    expected = _all_units(registry)
    eventually(lambda: _settled(members, expected) and len(_leaders(members)) == 1)
    old_leader = next(m for m in members if m.coordinator.is_leader)
    generation = read_assignment(zk_client, f"{zk_root}/assignment").generation  # type: ignore[union-attr]

    old_leader.client.stop()
    survivors = [m for m in members if m is not old_leader]
    eventually(lambda: len(_leaders(survivors)) == 1, timeout=5, what="a new leader")
    eventually(lambda: _partition_ok(survivors, expected), timeout=5, what="complete again")
    new = read_assignment(zk_client, f"{zk_root}/assignment")
    assert new is not None
    assert new.generation > generation
    assert new.leader == _leaders(survivors)[0]

    # The new leader keeps reacting to changes.
    registry.create(make_spec("views", buckets=2))
    eventually(lambda: _partition_ok(survivors, _all_units(registry)), what="new task placed")


def test_clean_stop_resigns_and_leaves(
    start_member: Callable[[str], Member],
    registry: TaskRegistry,
    make_spec: SpecFactory,
    eventually: Eventually,
) -> None:
    registry.create(make_spec("clicks", buckets=6))
    first = start_member("r-a")
    eventually(lambda: first.coordinator.is_leader and len(first.owned) == 6)
    second = start_member("r-b")
    eventually(lambda: _settled([first, second], _all_units(registry)))

    first.coordinator.stop()
    eventually(lambda: second.coordinator.is_leader, timeout=5, what="second leads")
    eventually(lambda: len(second.owned) == 6, timeout=5, what="second owns all")
    assert first.suspensions == 0  # a clean stop is not a suspension


def _expire_session(client: KazooClient, hosts: str) -> None:
    """Close `client`'s session from a second connection (kazoo's own test trick)."""
    session_id, password = client.client_id
    twin = KazooClient(hosts=hosts, client_id=(session_id, password))
    twin.start(timeout=10)
    twin.stop()
    twin.close()


def test_session_expiry_suspends_then_rejoins(
    start_member: Callable[[str], Member],
    registry: TaskRegistry,
    make_spec: SpecFactory,
    eventually: Eventually,
    zk_hosts: str,
    zk_client: KazooClient,
    zk_root: str,
) -> None:
    registry.create(make_spec("clicks", buckets=8))
    members = [start_member(name) for name in ("r-a", "r-b")]
    expected = _all_units(registry)
    eventually(lambda: _settled(members, expected) and len(_leaders(members)) == 1)
    victim = next(m for m in members if m.coordinator.is_leader)  # the harder case
    other = next(m for m in members if m is not victim)
    old_session = victim.client.client_id[0]

    _expire_session(victim.client, zk_hosts)

    eventually(lambda: victim.suspensions >= 1, timeout=10, what="on_suspended called")
    with victim.lock:
        assert victim.events[victim.events.index("suspended") - 1] == "assignment"
    # A new session, the member re-registered and it gets an assignment again.
    eventually(
        lambda: victim.client.connected and victim.client.client_id[0] != old_session,
        timeout=15,
        what="new session",
    )
    eventually(lambda: victim.emitting, timeout=10, what="resumed via on_assignment")
    eventually(lambda: _settled(members, expected), timeout=10, what="both own units again")
    eventually(lambda: len(_leaders(members)) == 1, timeout=10, what="one leader")
    view = cluster_view(zk_client, root=zk_root)
    assert set(view["members"]) == {"r-a", "r-b"}
    assert victim.coordinator.owned_units() == victim.owned
    assert other.suspensions == 0


def test_a_deposed_leader_cannot_overwrite_the_assignment(
    start_member: Callable[[str], Member],
    registry: TaskRegistry,
    make_spec: SpecFactory,
    eventually: Eventually,
    zk_client: KazooClient,
    zk_root: str,
) -> None:
    """Writes are fenced by the writer's election node: a stale leader's write fails."""
    registry.create(make_spec("clicks", buckets=4))
    member = start_member("r-a")
    eventually(lambda: len(member.owned) == 4)
    before = read_assignment(zk_client, f"{zk_root}/assignment")

    zk_client.create(f"{zk_root}/election/stale-node", ephemeral=True)
    stale = AssignmentLeader(
        zk_client,
        paths=ZkPaths(root=zk_root),
        member_id="zombie",
        fence_path=f"{zk_root}/election/stale-node",
    )
    zk_client.delete(f"{zk_root}/election/stale-node")  # its session "expired"
    with pytest.raises(LeadershipLostError):
        stale.publish()
    assert read_assignment(zk_client, f"{zk_root}/assignment") == before


def test_a_dropped_connection_suspends_and_resumes_in_the_same_session(
    start_member: Callable[[str], Member],
    registry: TaskRegistry,
    make_spec: SpecFactory,
    eventually: Eventually,
) -> None:
    registry.create(make_spec("clicks", buckets=4))
    member = start_member("r-a")
    eventually(lambda: len(member.owned) == 4)
    session = member.client.client_id[0]
    deliveries = member.events.count("assignment")

    # The TCP connection breaks, the session does not (kazoo then reconnects to it).
    member.client._connection._socket.shutdown(socket.SHUT_RDWR)

    eventually(lambda: member.suspensions == 1, timeout=5, what="on_suspended called")
    eventually(lambda: member.emitting, timeout=10, what="resumed")
    assert member.client.client_id[0] == session
    assert member.events.count("assignment") == deliveries + 1  # the resume signal
    assert member.owned == member.coordinator.owned_units() and len(member.owned) == 4

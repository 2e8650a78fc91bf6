"""Reducer membership: one ephemeral node `/mars/reducers/<member id>` per live process.

The node disappears when the process's ZooKeeper session ends (clean stop, crash + session
timeout, or expiry), which is what tells the leader to move the member's units elsewhere.
"""

from __future__ import annotations

import json
import os
import socket
import time
from dataclasses import asdict, dataclass

from kazoo.client import KazooClient
from kazoo.exceptions import NodeExistsError, NoNodeError

from mars.registry import validate_task_id
from mars.registry.paths import ZkPaths


class MemberIdInUseError(RuntimeError):
    """Another live session holds this member id (a second process with the same id?)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class MemberInfo:
    """What a reducer publishes about itself in its membership node."""

    member_id: str
    host: str
    pid: int
    started_ms: int
    metrics: str | None = None  # "host:port" of its Prometheus /metrics

    def to_bytes(self) -> bytes:
        return json.dumps(asdict(self), separators=(",", ":")).encode()

    @classmethod
    def from_bytes(cls, member_id: str, data: bytes) -> MemberInfo:
        try:
            doc = json.loads(data)
            return cls(
                member_id=member_id,
                host=str(doc.get("host", "")),
                pid=int(doc.get("pid", 0)),
                started_ms=int(doc.get("started_ms", 0)),
                metrics=doc.get("metrics") or None,
            )
        except (ValueError, TypeError, AttributeError):
            return cls(member_id=member_id, host="", pid=0, started_ms=0)


class Membership:
    """Registers one member; `register` is safe to call again after a session loss."""

    def __init__(
        self,
        client: KazooClient,
        *,
        paths: ZkPaths,
        member_id: str,
        metrics_address: str | None = None,
    ) -> None:
        validate_task_id(member_id)  # same rule: one ZooKeeper node name
        self._client = client
        self._paths = paths
        self.info = MemberInfo(
            member_id=member_id,
            host=socket.gethostname(),
            pid=os.getpid(),
            started_ms=time.time_ns() // 1_000_000,
            metrics=metrics_address,
        )

    @property
    def path(self) -> str:
        return self._paths.reducer(self.info.member_id)

    def register(self, *, wait_s: float = 30.0) -> None:
        """Create the ephemeral node; wait up to `wait_s` for a dead predecessor's to expire.

        A process restarted under the same id may find its previous session's node, which
        ZooKeeper removes at that session's timeout.
        """
        self._client.ensure_path(self._paths.reducers)
        deadline = time.monotonic() + wait_s
        while True:
            try:
                self._client.create(self.path, self.info.to_bytes(), ephemeral=True)
                return
            except NodeExistsError:
                if self._is_mine():
                    return
            if time.monotonic() > deadline:
                raise MemberIdInUseError(f"member id {self.info.member_id!r} is in use")
            time.sleep(0.2)

    def _is_mine(self) -> bool:
        try:
            _, stat = self._client.get(self.path)
        except NoNodeError:
            return False
        session_id, _ = self._client.client_id or (None, None)
        return bool(stat.ephemeralOwner == session_id)

    def unregister(self) -> None:
        """Remove the node if this session owns it (a clean leave, faster than expiry)."""
        try:
            if self._is_mine():
                self._client.delete(self.path)
        except NoNodeError:
            pass


def list_members(client: KazooClient, paths: ZkPaths) -> dict[str, MemberInfo]:
    """The live members, by id."""
    try:
        children = client.get_children(paths.reducers)
    except NoNodeError:
        return {}
    members = {}
    for member_id in sorted(children):
        try:
            data, _ = client.get(paths.reducer(member_id))
        except NoNodeError:
            continue  # left meanwhile
        members[member_id] = MemberInfo.from_bytes(member_id, data)
    return members

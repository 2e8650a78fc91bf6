"""Which reducer incarnation holds each unit, and whether it let go: the fence of the
owners' shared producers (docs/reducer.md, "One producer per process").

A holder node `/mars/holders/<task id>/<bucket>` names the incarnation holding the unit, its
transactional id, and whether it released the unit after its last transaction. It is changed
only by compare-and-set on the node's version, so two would-be holders cannot both win. An
incarnation is alive while its ephemeral node `/mars/incarnations/<id>` exists.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import asdict, dataclass

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from mars.registry.paths import ZkPaths


@dataclass(frozen=True, slots=True, kw_only=True)
class Holder:
    incarnation: str
    transactional_id: str
    released: bool = False

    def to_bytes(self) -> bytes:
        return json.dumps(asdict(self), separators=(",", ":")).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> Holder:
        doc = json.loads(data)
        return cls(
            incarnation=str(doc["incarnation"]),
            transactional_id=str(doc["transactional_id"]),
            released=bool(doc.get("released", False)),
        )


@dataclass(frozen=True, slots=True)
class HolderRead:
    holder: Holder | None  # None: no node yet
    version: int  # the node's version, for the compare-and-set (-1: no node)


class UnitHolders:
    """The holder nodes and incarnation nodes of one Mars root."""

    def __init__(self, client: KazooClient, paths: ZkPaths) -> None:
        self._client = client
        self._paths = paths

    def register(self, incarnation: str) -> None:
        """The incarnation's ephemeral node: it lives as long as this ZooKeeper session."""
        self._client.create(
            self._paths.incarnation(incarnation), b"", ephemeral=True, makepath=True
        )

    def unregister(self, incarnation: str) -> None:
        with contextlib.suppress(NoNodeError):
            self._client.delete(self._paths.incarnation(incarnation))

    def alive(self, incarnation: str) -> bool:
        return self._client.exists(self._paths.incarnation(incarnation)) is not None

    def read(self, task_id: str, bucket: int) -> HolderRead:
        try:
            data, stat = self._client.get(self._paths.holder(task_id, bucket))
        except NoNodeError:
            return HolderRead(None, -1)
        return HolderRead(Holder.from_bytes(data), stat.version)

    def replace(self, task_id: str, bucket: int, holder: Holder, read: HolderRead) -> bool:
        """Write `holder` if the node is still as `read` saw it; False if someone changed it."""
        path = self._paths.holder(task_id, bucket)
        try:
            if read.holder is None:
                self._client.create(path, holder.to_bytes(), makepath=True)
            else:
                self._client.set(path, holder.to_bytes(), version=read.version)
        except (NodeExistsError, BadVersionError, NoNodeError):
            return False
        return True

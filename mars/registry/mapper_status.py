"""What a mapper publishes about itself in its ZooKeeper node `/mars/mappers/<member id>`.

Ephemeral (it goes with the process's session), JSON: where to scrape the process, and per
owned partition the read position, the broker's end offset and the lag, paused or not; per task
the backlog. Written by `mapper.status_publisher`, read by `GET /cluster`, the dashboard and
`mars top`.
"""

from __future__ import annotations

import json
import os
import socket
from dataclasses import asdict, dataclass, field
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from mars.registry.paths import ZkPaths


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionStatus:
    topic: str
    partition: int
    position: int  # the next offset this mapper reads (-1: unknown)
    end: int | None  # the broker's last stable offset (None: no answer this round)
    lag: int | None
    paused: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class MapperStatus:
    member_id: str
    metrics: str | None  # "host:port" of its /metrics
    updated_ms: int
    partitions: list[PartitionStatus]
    backlog: dict[str, int]  # task -> unmerged data sets (last reading)
    cpu: float | None = None  # CPU seconds per second since the last status (`mars.cpu_meter`)
    host: str = field(default_factory=socket.gethostname)
    pid: int = field(default_factory=os.getpid)

    def to_bytes(self) -> bytes:
        return json.dumps(asdict(self), separators=(",", ":")).encode()

    @staticmethod
    def parse(data: bytes) -> dict[str, Any]:
        """The published JSON as a dict ({} when empty or not JSON: an older process)."""
        try:
            doc = json.loads(data) if data else {}
        except ValueError:
            return {}
        return doc if isinstance(doc, dict) else {}


def list_mappers(client: KazooClient, paths: ZkPaths) -> dict[str, dict[str, Any]]:
    """Mapper id -> the status it published ({} for a node without one)."""
    try:
        children = client.get_children(paths.mappers)
    except NoNodeError:
        return {}
    mappers: dict[str, dict[str, Any]] = {}
    for member_id in sorted(children):
        try:
            data, _stat = client.get(f"{paths.mappers}/{member_id}")
        except NoNodeError:
            continue  # left meanwhile
        mappers[member_id] = MapperStatus.parse(data)
    return mappers

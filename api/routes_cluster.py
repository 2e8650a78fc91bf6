"""`GET /cluster` (reducer leader, members, assignment; mapper members) and `GET /healthz`."""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Depends
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from api.schemas import ClusterState, Health
from api.services import ApiServices, get_services
from mars.registry import ZkPaths
from mars.registry.cluster_view import cluster_view

router = APIRouter(tags=["cluster"])
Services = Annotated[ApiServices, Depends(get_services)]


def mapper_members(client: KazooClient, paths: ZkPaths) -> dict[str, Any]:
    """Mapper id -> the JSON it published in `/mars/mappers/<id>` ({} when not JSON)."""
    try:
        children = client.get_children(paths.mappers)
    except NoNodeError:
        return {}
    members: dict[str, Any] = {}
    for member_id in sorted(children):
        try:
            data, _stat = client.get(f"{paths.mappers}/{member_id}")
        except NoNodeError:
            continue  # left meanwhile
        try:
            info = json.loads(data) if data else {}
        except ValueError:
            info = {}
        members[member_id] = info if isinstance(info, dict) else {"data": info}
    return members


@router.get("/cluster", response_model=ClusterState)
def cluster(services: Services) -> ClusterState:
    root = services.settings.zookeeper.root
    view = cluster_view(services.zk, root=root)
    return ClusterState(
        leader=view["leader"],
        members=view["members"],
        assignment=view["assignment"],
        mappers=mapper_members(services.zk, ZkPaths(root=root)),
    )


@router.get("/healthz", response_model=Health)
def healthz(services: Services) -> Health:
    """200 once the process is up and its ZooKeeper session is connected."""
    return Health(status="ok" if services.zk.connected else "zookeeper disconnected")

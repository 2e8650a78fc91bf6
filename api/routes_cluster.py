"""`GET /cluster` (reducer leader, members with their live figures, assignment; mappers with
their partitions and lag; Redis memory) and `GET /healthz`."""

from __future__ import annotations

from typing import Annotated

import redis
from fastapi import APIRouter, Depends

from api.live import now_ms
from api.schemas import ClusterState, Health
from api.services import ApiServices, get_services
from mars.registry import ZkPaths
from mars.registry.cluster_view import cluster_view
from mars.registry.mapper_status import list_mappers

router = APIRouter(tags=["cluster"])
Services = Annotated[ApiServices, Depends(get_services)]


@router.get("/cluster", response_model=ClusterState)
def cluster(services: Services) -> ClusterState:
    root = services.settings.zookeeper.root
    view = cluster_view(services.zk, root=root)
    members = view["members"]
    memory: int | None = None
    try:
        for member_id, member in members.items():
            running = services.seq_store.reducer_stats.process(member_id)
            member["owned_units"] = running.get("owned_units", [])
            member["merge_rate"] = running.get("merge_rate")
        memory = services.seq_store.memory_used()
    except redis.RedisError:
        pass  # ZooKeeper's view alone is still worth showing
    return ClusterState(
        leader=view["leader"],
        members=members,
        assignment=view["assignment"],
        mappers=list_mappers(services.zk, ZkPaths(root=root)),
        redis_used_memory_bytes=memory,
        measured_ms=now_ms(),
    )


@router.get("/healthz", response_model=Health)
def healthz(services: Services) -> Health:
    """200 once the process is up and its ZooKeeper session is connected."""
    return Health(status="ok" if services.zk.connected else "zookeeper disconnected")

"""`GET /cluster` (reducer leader, members with their live figures, assignment; mappers with
their partitions and lag; Redis memory; elasticity advice) and `GET /healthz`."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends

from api.live import cluster_state
from api.schemas import ClusterState, Health
from api.services import ApiServices, get_services

router = APIRouter(tags=["cluster"])
Services = Annotated[ApiServices, Depends(get_services)]


@router.get("/cluster", response_model=ClusterState)
def cluster(services: Services) -> ClusterState:
    return cluster_state(services)


@router.get("/healthz", response_model=Health)
def healthz(services: Services) -> Health:
    """200 once the process is up and its ZooKeeper session is connected."""
    return Health(status="ok" if services.zk.connected else "zookeeper disconnected")

"""`GET /metrics` (the API's Prometheus metrics: the cluster and every task's exact counters)
and `GET /metrics/targets` (every Mars process, for Prometheus's HTTP service discovery)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from api.schemas import MetricsTarget
from api.services import ApiServices, get_services
from mars.registry import ZkPaths
from mars.registry.cluster_view import cluster_view
from mars.registry.mapper_status import list_mappers

router = APIRouter(tags=["metrics"])
Services = Annotated[ApiServices, Depends(get_services)]


@router.get("/metrics", response_class=Response)
def metrics(request: Request) -> Response:
    """Prometheus text format."""
    registry: CollectorRegistry = request.app.state.metrics_registry
    return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)


@router.get("/metrics/targets", response_model=list[MetricsTarget])
def metrics_targets(request: Request, services: Services) -> list[MetricsTarget]:
    """Every process's `/metrics` address with its role and member id (`http_sd_configs`)."""
    root = services.settings.zookeeper.root
    api = request.url.netloc
    targets = [MetricsTarget(targets=[api], labels={"role": "api", "member": api})]
    for member_id, member in cluster_view(services.zk, root=root)["members"].items():
        if member.get("metrics"):
            targets.append(
                MetricsTarget(
                    targets=[member["metrics"]], labels={"role": "reducer", "member": member_id}
                )
            )
    for member_id, status in list_mappers(services.zk, ZkPaths(root=root)).items():
        if status.get("metrics"):
            targets.append(
                MetricsTarget(
                    targets=[status["metrics"]], labels={"role": "mapper", "member": member_id}
                )
            )
    return targets

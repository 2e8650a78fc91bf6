"""`create_app(settings)`: the FastAPI application of one API process."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from api import routes_cluster, routes_explain, routes_metrics, routes_tasks
from api.cluster_collector import cluster_registry
from api.errors import install_error_handlers
from api.routes_ui import install_ui
from api.services import ApiServices
from mars.config import Settings


def create_app(settings: Settings) -> FastAPI:
    """The API with its clients (ZooKeeper, Redis, Kafka admin) opened at startup."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        services = ApiServices.open(settings)
        app.state.services = services
        app.state.metrics_registry = cluster_registry(services)
        try:
            yield
        finally:
            services.close()

    app = FastAPI(
        title="Mars",
        description="Continuous windowed GROUP BY statistics over Kafka. Mutating endpoints "
        "need `Authorization: Bearer <token>`.",
        version="0.1.0",
        lifespan=lifespan,
    )
    install_error_handlers(app)
    app.include_router(routes_tasks.router)
    app.include_router(routes_explain.router)
    app.include_router(routes_cluster.router)
    app.include_router(routes_metrics.router)
    install_ui(app)
    return app

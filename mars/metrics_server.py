"""Serve one process's Prometheus registry on `/metrics` (mappers and reducers).

The address is what the process publishes in ZooKeeper, so `GET /metrics/targets` (the API)
can hand every process to Prometheus's HTTP service discovery, whatever port it took.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from threading import Thread
from wsgiref.simple_server import WSGIServer

from prometheus_client import (
    CollectorRegistry,
    Gauge,
    GCCollector,
    PlatformCollector,
    ProcessCollector,
    start_http_server,
)

from mars.config import MetricsSettings


@dataclass(slots=True)
class MetricsServer:
    """A running `/metrics` endpoint; `address` is "host:port" as others can reach it."""

    address: str
    _server: WSGIServer
    _thread: Thread

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def serve_metrics(
    registry: CollectorRegistry, settings: MetricsSettings, *, role: str, member_id: str
) -> MetricsServer:
    """Start the endpoint on a thread of its own; adds `mars_process_info{role, member}` and
    the standard `process_*` (CPU, memory, file descriptors) and `python_*` collectors."""
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    GCCollector(registry=registry)
    info = Gauge(
        "mars_process_info",
        "One per Mars process: its role and member id.",
        ["role", "member"],
        registry=registry,
    )
    info.labels(role=role, member=member_id).set(1)
    server, thread = start_http_server(settings.port, addr=settings.host, registry=registry)
    host = socket.gethostname() if settings.host in ("0.0.0.0", "::") else settings.host
    return MetricsServer(f"{host}:{server.server_port}", server, thread)

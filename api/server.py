"""Run the API with uvicorn on `settings.api.host:port` (`mars api`)."""

from __future__ import annotations

import uvicorn

from api.app import create_app
from mars.config import Settings


def serve(settings: Settings, *, log_level: str = "info") -> None:
    """Serve until interrupted (SIGINT/SIGTERM stop uvicorn gracefully)."""
    uvicorn.run(
        create_app(settings),
        host=settings.api.host,
        port=settings.api.port,
        log_level=log_level,
    )

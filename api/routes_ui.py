"""`/ui`: the web dashboard, static files served as they are (no build step). The page polls
`GET /tasks`, `GET /tasks/{id}`, `GET /cluster` and the results once a second; see
`api/ui/dashboard.js`."""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import RedirectResponse
from fastapi.staticfiles import StaticFiles

UI_DIR = Path(__file__).resolve().parent / "ui"


def install_ui(app: FastAPI) -> None:
    """Serve the dashboard at `/ui/` (and redirect `/ui` and `/` there)."""

    @app.get("/ui", include_in_schema=False)
    @app.get("/", include_in_schema=False)
    def to_dashboard() -> RedirectResponse:
        return RedirectResponse("/ui/")

    app.mount("/ui/", StaticFiles(directory=UI_DIR, html=True), name="ui")
